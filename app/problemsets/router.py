"""Problem sets: list and read (student view), upload (instructors; validated before it is stored)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request, UploadFile
from starlette.concurrency import run_in_threadpool

from app.deps import InstructorUser, PrincipalDep, SessionDep, SettingsDep
from app.errors import Invalid, NotFound
from app.problemsets import service
from app.problemsets.schemas import ProblemSetSummary, ProblemSetView, ProblemView, UploadResult, VersionPublic
from graders.grade import problem_view

router = APIRouter(prefix="/problem-sets", tags=["problem sets"])


@router.get("", response_model=list[ProblemSetSummary])
def list_problem_sets(principal: PrincipalDep, session: SessionDep) -> list[ProblemSetSummary]:
    """Problem sets you can see, at their latest version."""
    principal.require("read")
    return [
        ProblemSetSummary(
            id=ps.slug,
            title=ps.title,
            version=v.number,
            problems=len(v.spec.get("problems", [])),
            due_at=v.spec.get("due_at"),
        )
        for ps, v in service.list_sets(session, include_hidden=principal.is_staff)
    ]


@router.get("/{slug}", response_model=ProblemSetView, response_model_exclude_unset=True)
def get_problem_set(slug: str, principal: PrincipalDep, session: SessionDep, settings: SettingsDep) -> dict[str, Any]:
    """The student view of a set: prompts, parts and points; never answers, checks, solutions or mutants."""
    principal.require("read")
    version = service.get_latest(session, slug, include_hidden=principal.is_staff)
    return service.student_view(version, service.loaded_version(settings, version))


@router.get("/{slug}/problems/{problem_id}", response_model=ProblemView, response_model_exclude_unset=True)
def get_problem(
    slug: str, problem_id: str, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> dict[str, Any]:
    """One problem of the student view."""
    principal.require("read")
    version = service.get_latest(session, slug, include_hidden=principal.is_staff)
    loaded = service.loaded_version(settings, version)
    problem = loaded.spec.problem(problem_id)
    if problem is None:
        raise NotFound(f"unknown problem {problem_id!r} in set {slug!r}", field="problem_id")
    return problem_view(problem, loaded, version.validation_report.get("points", {}).get(problem_id))


@router.post("", response_model=UploadResult, status_code=201)
async def upload_problem_set(
    request: Request, file: UploadFile, user: InstructorUser, settings: SettingsDep
) -> UploadResult:
    """Upload a set as .zip or .tar.gz. It is validated completely (schema, files, answer cases, every reference
    solution full marks, every mutant caught) before it is stored; an invalid set gets 422 with the report."""
    data = await file.read(settings.max_upload_bytes + 1)
    if len(data) > settings.max_upload_bytes:
        raise Invalid(f"archive is larger than {settings.max_upload_bytes} bytes", field="file")
    grader = request.app.state.code_grader

    def work() -> UploadResult:
        with request.app.state.session_factory() as session:
            version, report, created = service.upload(
                session,
                data=data,
                filename=file.filename or "upload",
                settings=settings,
                user_id=user.id,
                grader=grader,
            )
            session.commit()
            return UploadResult(
                id=version.problem_set.slug,
                version=version.number,
                created=created,
                content_hash=version.content_hash,
                report=report.to_dict() if created else version.validation_report,
            )

    # Validation runs reference solutions and mutants: CPU work, kept off the event loop.
    return await run_in_threadpool(work)


@router.get("/{slug}/versions", response_model=list[VersionPublic])
def list_versions(slug: str, user: InstructorUser, session: SessionDep) -> list[VersionPublic]:
    """Every uploaded version of a set, with its validation report (instructors)."""
    version = service.get_latest(session, slug, include_hidden=True)
    return [
        VersionPublic(
            number=v.number,
            label=v.label,
            content_hash=v.content_hash,
            created_at=v.created_at,
            report=v.validation_report,
        )
        for v in version.problem_set.versions
    ]
