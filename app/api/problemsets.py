"""Problem sets as the caller's assignments: list and read (student view), upload (staff; validated first)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Form, Path, Query, Request, Response, UploadFile
from starlette.concurrency import run_in_threadpool

from app.courses import clock, course_sets
from app.courses import service as courses
from app.courses.models import Assignment
from app.courses.permissions import Action
from app.courses.policy import policy_for
from app.deps import MAX_ROW_ID, InstructorUser, PrincipalDep, SessionDep, SettingsDep, cross_site
from app.error_format import error_responses
from app.errors import Forbidden, Invalid, NotFound
from app.problemsets import aliases, service, variants
from app.problemsets.models import ProblemSet
from app.problemsets.schemas import (
    AliasRequest,
    ProblemSetSummary,
    ProblemSetView,
    ProblemView,
    UploadResult,
    VersionPublic,
)
from app.submissions.attempts import variant_rounds
from graders.grade import problem_view

router = APIRouter(prefix="/problem-sets", tags=["problem sets"])
OfferingQuery = Annotated[
    int | None, Query(ge=1, le=MAX_ROW_ID, description="the offering, when the set is assigned in several of yours")
]


@router.get("", response_model=list[ProblemSetSummary])
def list_problem_sets(
    principal: PrincipalDep, session: SessionDep, offering: OfferingQuery = None
) -> list[ProblemSetSummary]:
    """The sets assigned in your offerings: students see open ones, staff all of their offerings'."""
    principal.require("read")
    out = []
    for found in courses.visible_assignments(session, principal.access, offering_id=offering):
        version = courses.version_of(session, found.assignment)
        member = courses.member_of(session, found.assignment.offering_id, principal.user.id)
        spec = service.spec_of(version)
        started = clock.started_at(session, found.assignment, principal.user.id)
        policy = policy_for(found.assignment, spec, "", member, started_at=started)
        out.append(
            ProblemSetSummary(
                id=found.problem_set.slug,
                title=found.problem_set.title,
                version=version.number,
                problems=len(version.spec.get("problems", [])),
                due_at=policy.deadline,
                offering=found.assignment.offering_id,
                assignment=found.assignment.id,
                open_at=found.assignment.open_at,
                max_attempts=policy.max_attempts,
            )
        )
    return out


def _view(session: SessionDep, principal: PrincipalDep, slug: str, offering: int | None) -> tuple[Any, Any, Any]:
    found = courses.resolve(session, principal.access, slug, offering_id=offering)
    version = courses.version_of(session, found.assignment)
    member = courses.member_of(session, found.assignment.offering_id, principal.user.id)
    return found, version, member


@router.get("/{slug}", response_model=ProblemSetView, response_model_exclude_unset=True)
def get_problem_set(
    request: Request,
    slug: str,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    offering: OfferingQuery = None,
) -> dict[str, Any]:
    """The student view of a set: prompts, parts and points; never answers, checks, solutions or mutants."""
    principal.require("read")
    found, version, member = _view(session, principal, slug, offering)
    loaded = service.loaded_version(settings, version)
    started = _open(request, session, principal, found.assignment)
    due = policy_for(found.assignment, loaded.spec, "", member, started_at=started).deadline
    rounds = variant_rounds(session, found.assignment, principal.user.id)
    mine = variants.student_variants(session, settings, version=version, loaded=loaded, rounds=rounds,
                                     assignment_id=found.assignment.id, user_id=principal.user.id,
                                     shared=found.assignment.shared_variant)  # fmt: skip
    session.commit()  # a variant generated now is kept
    return service.student_view(version, loaded, due_at=due, variants=mine)


def _open(request: Request, session: SessionDep, principal: PrincipalDep, assignment: Assignment) -> datetime | None:
    """A student opening a timed set starts their clock (committed at once: it stands whatever happens next)."""
    if principal.access.can(assignment.offering_id, Action.VIEW_UNRELEASED):
        return None
    if (
        assignment.time_limit_min
        and not principal.via_token
        and cross_site(request)
        and clock.started_at(session, assignment, principal.user.id) is None
    ):
        # A link on another site must not start a student's time (the session cookie comes along with a GET).
        raise Forbidden("a timed set is not started from another site's link: open it from its page here")
    started = clock.start(session, assignment, principal.user.id)
    session.commit()
    return started


@router.get("/{slug}/problems/{problem_id}", response_model=ProblemView, response_model_exclude_unset=True)
def get_problem(
    request: Request,
    slug: str,
    problem_id: str,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    offering: OfferingQuery = None,
) -> dict[str, Any]:
    """One problem of the student view."""
    principal.require("read")
    found, version, _ = _view(session, principal, slug, offering)
    loaded = service.loaded_version(settings, version)
    problem = loaded.spec.problem(problem_id)
    if problem is not None:
        # Reading a problem's prompt opens the set as much as reading the whole set does: it starts the clock of
        # a timed assignment, or a student could read every prompt first and start their time only to submit.
        _open(request, session, principal, found.assignment)
    if problem is None:
        raise NotFound(f"unknown problem {problem_id!r} in set {slug!r}", field="problem_id")
    round_ = variant_rounds(session, found.assignment, principal.user.id).get(problem_id, 0)
    _, variant = variants.student_variant(session, settings, version=version, loaded=loaded, problem=problem,
                                          assignment_id=found.assignment.id, user_id=principal.user.id,
                                          round_=round_, shared=found.assignment.shared_variant)  # fmt: skip
    session.commit()  # a variant generated now is kept
    return problem_view(problem, loaded, version.validation_report.get("points", {}).get(problem_id), variant)


@router.post("", response_model=UploadResult, status_code=201, responses=error_responses(404, 409))
async def upload_problem_set(
    request: Request,
    file: UploadFile,
    user: InstructorUser,
    principal: PrincipalDep,
    settings: SettingsDep,
    offering: Annotated[int | None, Form(ge=1, le=MAX_ROW_ID, description="assign it in this offering")] = None,
    publish: Annotated[
        bool, Form(description="publish its assignment in that offering now (else a new one is a draft)")
    ] = False,
) -> UploadResult:
    """Upload a set as .zip or .tar.gz into one of the offerings you teach (``offering``; optional when you teach
    one). It is validated completely (schema, files, answer cases, every reference solution full marks, every
    mutant caught) before it is stored and assigned; an invalid set gets 422 with the report. A new version of an
    existing set needs the right to upload in an offering that has it assigned. A new assignment is a draft,
    invisible to students, unless ``publish`` (a CI pipeline that uploads and opens the set in one call); an
    existing one keeps its state unless ``publish``."""
    data = await file.read(settings.max_upload_bytes + 1)
    if len(data) > settings.max_upload_bytes:
        raise Invalid(f"archive is larger than {settings.max_upload_bytes} bytes", field="file")
    grader = request.app.state.code_grader
    access = principal.access

    def work() -> UploadResult:
        with request.app.state.session_factory() as session:
            target = _upload_target(session, access, offering, user.is_admin)

            def may_replace(problem_set: ProblemSet) -> bool:
                return user.is_admin or bool(
                    courses.offerings_with_set(session, problem_set) & access.offerings(Action.UPLOAD)
                )

            version, report, created = service.upload(
                session,
                data=data,
                filename=file.filename or "upload",
                settings=settings,
                user_id=user.id,
                grader=grader,
                may_replace=may_replace,
            )
            placed = courses.ensure_assigned(session, offering=target, problem_set=version.problem_set, published=False)
            if publish:
                courses.publish(session, placed, open_at=placed.open_at, due_at=placed.due_at)
            session.commit()
            return UploadResult(
                id=version.problem_set.slug,
                version=version.number,
                created=created,
                content_hash=version.content_hash,
                report=report.to_dict() if created else version.validation_report,
                offering=target.id,
            )

    # Validation runs reference solutions and mutants: CPU work, kept off the event loop.
    return await run_in_threadpool(work)


@router.post(
    "/{slug}/aliases", response_model=UploadResult, status_code=201, responses=error_responses(404, 409)
)  # fmt: skip
async def add_alias(
    request: Request,
    slug: str,
    body: AliasRequest,
    user: InstructorUser,
    principal: PrincipalDep,
    settings: SettingsDep,
) -> UploadResult:
    """Accept one more answer for a text blank: a new version of the set whose problemset.yaml lists it among the
    blank's ``answers`` and ``accept`` (the file edited as written), validated like an upload before it is stored.
    409 when the answer is accepted already or is one of the blank's known-wrong examples, when the assignment is
    pinned to a version, or when another version was stored meanwhile; 422 for a blank that is not a text blank
    or a set the new version fails to validate (with the report). Regrade the problem afterwards to give the
    points (``POST /submissions/{id}/regrade``, or the bulk regrade page)."""
    grader, access = request.app.state.code_grader, principal.access
    alias = aliases.Alias(problem_id=body.problem, part_id=body.part, answer=body.answer)

    def work() -> UploadResult:
        with request.app.state.session_factory() as session:
            edit = course_sets.prepare_alias(session, settings, access, slug, body.offering, alias)
            mine = access.offerings(Action.UPLOAD)
            version, report, created = service.upload(
                session,
                data=edit.archive,
                filename=f"{slug}.tar.gz",
                settings=settings,
                user_id=user.id,
                grader=grader,
                may_replace=lambda ps: user.is_admin or bool(courses.offerings_with_set(session, ps) & mine),
                based_on=edit.based_on,
            )
            session.commit()
            return UploadResult(
                id=slug,
                version=version.number,
                created=created,
                content_hash=version.content_hash,
                report=report.to_dict(),
                offering=edit.offering_id,
            )

    # The gate runs reference solutions and mutants: CPU work, kept off the event loop.
    return await run_in_threadpool(work)


def _upload_target(session: Any, access: Any, offering: int | None, is_admin: bool) -> Any:
    if offering is not None:
        return courses.get_offering(session, access, offering, Action.UPLOAD)
    mine = sorted(access.offerings(Action.UPLOAD))
    if len(mine) == 1:
        return courses.get_offering(session, access, mine[0], Action.UPLOAD)
    if not mine:
        if is_admin:  # an admin with no course yet: the default offering
            return courses.home_offering(session)
        raise Invalid("you teach no offering to upload into", field="offering")
    raise Invalid(f"you teach several offerings {mine}; say which with 'offering'", field="offering")


@router.get("/{slug}/versions", response_model=list[VersionPublic])
def list_versions(
    slug: str, user: InstructorUser, principal: PrincipalDep, session: SessionDep, offering: OfferingQuery = None
) -> list[VersionPublic]:
    """Every uploaded version of a set, with its validation report (staff of an offering it is assigned in)."""
    found = courses.resolve(session, principal.access, slug, offering_id=offering, action=Action.VIEW_UNRELEASED)
    return [
        VersionPublic(
            number=v.number,
            label=v.label,
            content_hash=v.content_hash,
            created_at=v.created_at,
            report=v.validation_report,
        )
        for v in found.problem_set.versions
    ]


@router.get(
    "/{slug}/versions/{number}/archive",
    response_class=Response,
    responses={200: {"content": {"application/gzip": {}}, "description": "the version's files as a tar.gz"},
               **error_responses(404)},
)  # fmt: skip
def download_version(
    slug: str,
    number: Annotated[int, Path(ge=1, le=MAX_ROW_ID)],
    user: InstructorUser,
    principal: PrincipalDep,
    session: SessionDep,
    offering: OfferingQuery = None,
) -> Response:
    """One version's whole set (problemset.yaml, prompts, checks, solutions, mutants) as the tar.gz it is stored
    as: to bring a version made on the web (an alias accepted from the gradebook) back into the set's folder.
    Staff who may upload sets in an offering it is assigned in; the checks and solutions are in it."""
    found = courses.resolve(session, principal.access, slug, offering_id=offering, action=Action.UPLOAD)
    version = next((v for v in found.problem_set.versions if v.number == number), None)
    if version is None:
        raise NotFound(f"{slug!r} has no version {number}", field="number")
    return Response(
        version.archive,
        media_type="application/gzip",
        # The checks and solutions are in it: no shared cache keeps a copy.
        headers={"Content-Disposition": f'attachment; filename="{slug}-v{number}.tar.gz"', "Cache-Control": "no-store"},
    )
