"""Courses, offerings, rosters (CSV import with preview), join codes, assignments and overrides.

Every endpoint checks the caller's role in the offering through app.courses.permissions; an offering the caller
has no role in is 404.
"""

from __future__ import annotations

import csv
import io
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, Response, UploadFile
from sqlalchemy import select

from app.courses import invitations, roster, service
from app.courses.models import Assignment, Course, MemberRole, Offering
from app.courses.permissions import Action
from app.courses.schemas import (
    AssignmentCreate,
    AssignmentPublic,
    AssignmentUpdate,
    CourseCreate,
    CoursePublic,
    InvitationPublic,
    JoinCode,
    JoinRequest,
    MemberCreate,
    MemberPublic,
    MemberUpdate,
    OfferingCreate,
    OfferingPublic,
    OfferingUpdate,
    OverrideCreate,
    OverridePublic,
    Policy,
    RosterChange,
    RosterPreview,
    RosterRowPublic,
)
from app.deps import PrincipalDep, RowId, SessionDep, SettingsDep
from app.error_format import error_responses
from app.errors import Forbidden, Invalid, NotFound
from app.gradebook import drafts
from app.gradebook import service as gradebook
from app.gradebook.overrides import affected_users, rescore
from app.gradebook.schemas import Gradebook
from app.lti.passback import requeue_held
from app.problemsets.models import ProblemSetVersion
from graders.input_limits import MAX_CSV_BYTES

router = APIRouter(tags=["courses"])


def _offering_public(offering: Offering, principal: PrincipalDep) -> OfferingPublic:
    out = OfferingPublic.model_validate(offering)
    out.my_role = principal.access.role_in(offering.id)
    if principal.access.can(offering.id, Action.ROSTER):
        out.join_code = offering.join_code
    return out


@router.post("/courses", response_model=CoursePublic, status_code=201, responses=error_responses(409))
def create_course(
    body: CourseCreate, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> CoursePublic:
    """Create a course (admins, and instructors of any offering unless AUTOGRADER_INSTRUCTORS_CREATE_COURSES is
    off), with its first offering and you as its instructor. Add a term with POST /courses/{slug}/offerings."""
    if not service.may_create_courses(principal.access, instructors_may=settings.instructors_create_courses):
        raise Forbidden("only admins and instructors create courses")
    course = service.create_course(session, slug=body.slug, title=body.title)
    first = body.first_offering
    if first is None and not principal.user.is_admin:
        first = OfferingCreate.model_validate(
            {"slug": "main", "title": course.title}
        )  # else the creator would not be in their own course
    offerings = []
    if first is not None:
        offering = service.create_offering(
            session, course=course, slug=first.slug, title=first.title, time_zone=first.time_zone,
            starts_at=first.starts_at, ends_at=first.ends_at,
        )  # fmt: skip
        service.enroll(session, offering=offering, email=principal.user.email, role=MemberRole.INSTRUCTOR,
                       name=principal.user.display_name)  # fmt: skip
        offerings.append(offering)
    session.commit()
    return CoursePublic(
        id=course.id, slug=course.slug, title=course.title,
        offerings=[OfferingPublic.model_validate(o).model_copy(update={"my_role": MemberRole.INSTRUCTOR})
                   for o in offerings],
    )  # fmt: skip


@router.get("/courses", response_model=list[CoursePublic])
def list_courses(principal: PrincipalDep, session: SessionDep) -> list[CoursePublic]:
    """The courses you are a member of (through an offering), with those offerings; admins see every course."""
    mine = service.my_offerings(session, principal.access)
    by_course: dict[int, list[OfferingPublic]] = {}
    for offering in mine:
        by_course.setdefault(offering.course_id, []).append(_offering_public(offering, principal))
    query = select(Course).order_by(Course.slug)
    if not principal.user.is_admin:
        query = query.where(Course.id.in_(by_course))
    return [
        CoursePublic(id=c.id, slug=c.slug, title=c.title, offerings=by_course.get(c.id, []))
        for c in session.scalars(query)
    ]


@router.post(
    "/courses/{course_slug}/offerings", response_model=OfferingPublic, status_code=201, responses=error_responses(409)
)
def create_offering(
    course_slug: str, body: OfferingCreate, principal: PrincipalDep, session: SessionDep
) -> OfferingPublic:
    """Add an offering (a term) to a course: admins, or instructors of another offering of the same course. The
    creator is enrolled as its instructor."""
    course = service.get_course(session, course_slug)
    teaches = any(
        o.course_id == course.id
        for o in service.my_offerings(session, principal.access)
        if principal.access.can(o.id, Action.EDIT_OFFERING)
    )
    if not (principal.user.is_admin or teaches):
        raise NotFound(f"unknown course {course_slug!r}", field="course")
    offering = service.create_offering(
        session,
        course=course,
        slug=body.slug,
        title=body.title,
        time_zone=body.time_zone,
        starts_at=body.starts_at,
        ends_at=body.ends_at,
    )
    service.enroll(session, offering=offering, email=principal.user.email, role=MemberRole.INSTRUCTOR)
    session.commit()
    out = OfferingPublic.model_validate(offering)
    out.my_role = MemberRole.INSTRUCTOR
    return out


@router.get("/offerings", response_model=list[OfferingPublic])
def list_offerings(principal: PrincipalDep, session: SessionDep) -> list[OfferingPublic]:
    """The offerings you are an active member of, with your role."""
    return [_offering_public(o, principal) for o in service.my_offerings(session, principal.access)]


@router.get("/offerings/{offering_id}", response_model=OfferingPublic)
def get_offering(offering_id: RowId, principal: PrincipalDep, session: SessionDep) -> OfferingPublic:
    """One of your offerings."""
    return _offering_public(service.get_offering(session, principal.access, offering_id), principal)


@router.patch("/offerings/{offering_id}", response_model=OfferingPublic)
def update_offering(
    offering_id: RowId, body: OfferingUpdate, principal: PrincipalDep, session: SessionDep
) -> OfferingPublic:
    """Change an offering's title, dates, time zone, self-enrolment switch and cut-off (instructors)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.EDIT_OFFERING)
    changes = body.model_dump(exclude_unset=True)
    if "time_zone" in changes:
        changes["time_zone"] = service.check_zone(changes["time_zone"])
    for key, value in changes.items():
        setattr(offering, key, value)
    if offering.starts_at and offering.ends_at and offering.ends_at <= offering.starts_at:
        raise Invalid("ends_at must be after starts_at", field="ends_at")
    session.commit()
    return _offering_public(offering, principal)


@router.post("/offerings/{offering_id}/join-code", response_model=JoinCode)
def rotate_join_code(offering_id: RowId, request: Request, principal: PrincipalDep, session: SessionDep) -> JoinCode:
    """Make a new join code (the old one stops working) and switch self-enrolment on (instructors)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.ROSTER)
    code = service.rotate_join_code(session, offering)
    session.commit()
    return JoinCode(join_code=code, join_url=f"{request.base_url}join/{code}", join_enabled=True)


@router.post("/join", response_model=MemberPublic)
def join(body: JoinRequest, principal: PrincipalDep, session: SessionDep) -> MemberPublic:
    """Enrol yourself as a student with an offering's join code, until its self-enrolment cut-off."""
    if principal.via_token:
        raise Forbidden("join from a logged-in session, not with a token")
    member = service.join(session, user=principal.user, code=body.code)
    session.commit()
    return MemberPublic.model_validate(member)


# --- roster --------------------------------------------------------------------------------------------------------


@router.get("/offerings/{offering_id}/members", response_model=list[MemberPublic])
def list_members(offering_id: RowId, principal: PrincipalDep, session: SessionDep) -> list[MemberPublic]:
    """The roster (staff and observers of the offering)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.GRADEBOOK)
    return [MemberPublic.model_validate(m) for m in service.members(session, offering)]


@router.post("/offerings/{offering_id}/members", response_model=MemberPublic, status_code=201)
def add_member(offering_id: RowId, body: MemberCreate, principal: PrincipalDep, session: SessionDep) -> MemberPublic:
    """Add someone by email (instructors). They stay invited until they accept the offering's invitation (POST
    .../invitation): a new account sets its password with it, an existing one accepts it logged in. An admin's
    entry for an existing account is active at once."""
    offering = service.get_offering(session, principal.access, offering_id, Action.ROSTER)
    member = service.enroll(
        session,
        offering=offering,
        email=body.email,
        role=body.role,
        section=body.section,
        name=body.name,
        student_id=body.student_id,
        link_account=principal.user.is_admin,
    )
    session.commit()
    return MemberPublic.model_validate(member)


@router.patch("/offerings/{offering_id}/members/{member_id}", response_model=MemberPublic)
def update_member(
    offering_id: RowId, member_id: RowId, body: MemberUpdate, principal: PrincipalDep, session: SessionDep
) -> MemberPublic:
    """Change a member's role, status (drop, re-activate) or section (instructors)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.ROSTER)
    member = service.get_member(session, offering, member_id)
    service.set_member(session, member, role=body.role, status=body.status, section=body.section)
    session.commit()
    return MemberPublic.model_validate(member)


@router.post(
    "/offerings/{offering_id}/members/{member_id}/invitation",
    response_model=InvitationPublic,
    status_code=201,
    responses=error_responses(409),
)
def invite_member(
    offering_id: RowId,
    member_id: RowId,
    request: Request,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
) -> InvitationPublic:
    """A one-time link for an invited member to accept this offering (an earlier link stops working): without an
    account they set a password with it, with one they open it logged in. It activates this membership only.

    With AUTOGRADER_SMTP_HOST set it is mailed (``mailed: true``); otherwise, or when mailing fails, the link is in
    the answer for you to pass on. 409 when the member is active or dropped already (instructors)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.ROSTER)
    member = service.get_member(session, offering, member_id)
    sent = invitations.invite(session, settings, member, base_url=settings.public_url, title=offering.title)
    session.commit()
    return InvitationPublic(
        email=sent.email, expires_at=sent.expires_at, mailed=sent.mailed, link=sent.link, mail_error=sent.mail_error
    )


@router.post("/offerings/{offering_id}/roster", response_model=RosterPreview)
async def import_roster(
    offering_id: RowId,
    file: UploadFile,
    principal: PrincipalDep,
    session: SessionDep,
    apply: Annotated[bool, Query(description="false: preview the diff only; true: write it")] = False,
    drop_missing: Annotated[
        bool, Query(description="mark students missing from the file dropped (never staff)")
    ] = False,
) -> RosterPreview:
    """Import a roster CSV (email required; name, section, role, student_id optional; UTF-8, BOM or not).

    Without ``apply`` it only previews what would be added, changed and dropped. With it, the whole file is written
    in one transaction. Any bad row is a 422 listing every bad row with its line number, and nothing is written.
    """
    offering = service.get_offering(session, principal.access, offering_id, Action.ROSTER)
    data = await file.read(MAX_CSV_BYTES + 1)  # roster.parse refuses more than MAX_CSV_BYTES
    rows = roster.parse(data)
    result = roster.diff(session, offering, rows, drop_missing=drop_missing)
    preview = RosterPreview(
        applied=apply,
        added=[RosterRowPublic(line=r.line, email=r.email, role=r.role, section=r.section) for r in result.added],
        changed=[
            RosterChange(line=r.line, email=r.email, changes={k: [old, new] for k, (old, new) in c.items()})
            for r, c in result.changed
        ],
        unchanged=result.unchanged,
        dropped=[m.email for m in result.to_drop],
        new_sections=result.new_sections,
    )
    if apply:
        roster.apply(session, offering, result, link_accounts=principal.user.is_admin)
        session.commit()
    return preview


@router.get(
    "/offerings/{offering_id}/roster.csv", response_class=Response, responses={200: {"content": {"text/csv": {}}}}
)
def export_roster(offering_id: RowId, principal: PrincipalDep, session: SessionDep) -> Response:
    """The roster as CSV, in the columns the import reads (staff and observers)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.GRADEBOOK)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["email", "name", "section", "role", "student_id", "status"])
    for m in service.members(session, offering):
        writer.writerow([gradebook.csv_text(v) for v in (m.email, m.name, m.section, m.role, m.student_id, m.status)])
    return Response(
        out.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="roster-{offering.slug}.csv"'},
    )


# --- assignments and overrides -------------------------------------------------------------------------------------


def _assignment_public(session: SessionDep, a: Assignment) -> AssignmentPublic:
    out = AssignmentPublic.model_validate(
        {
            **{k: getattr(a, k) for k in AssignmentPublic.model_fields if k not in ("problem_set", "published")},
            "problem_set": a.problem_set.slug,
            "published": a.published_at is not None,
        }
    )
    return out


def _policy_fields(session: SessionDep, body: Policy, problem_set_id: int) -> dict[str, Any]:
    changes = body.model_dump(exclude_unset=True, exclude={"problem_set", "published"})
    if "pinned_version" in changes:
        number = changes.pop("pinned_version")
        version = None
        if number is not None:
            version = session.scalar(
                select(ProblemSetVersion).where(
                    ProblemSetVersion.problem_set_id == problem_set_id, ProblemSetVersion.number == number
                )
            )
            if version is None:
                raise Invalid(f"the set has no version {number}", field="pinned_version")
        changes["pinned_version_id"] = version.id if version else None
    return changes  # a null where the column has a value was refused by the schema (Policy.nullable)


@router.get("/offerings/{offering_id}/assignments", response_model=list[AssignmentPublic])
def list_assignments(offering_id: RowId, principal: PrincipalDep, session: SessionDep) -> list[AssignmentPublic]:
    """The offering's assignments you can see (students: open ones), with their dates and policies."""
    service.get_offering(session, principal.access, offering_id)
    found = service.visible_assignments(session, principal.access, offering_id=offering_id)
    return [_assignment_public(session, f.assignment) for f in found]


@router.post(
    "/offerings/{offering_id}/assignments",
    response_model=AssignmentPublic,
    status_code=201,
    responses=error_responses(409),
)
def create_assignment(
    offering_id: RowId, body: AssignmentCreate, principal: PrincipalDep, session: SessionDep
) -> AssignmentPublic:
    """Assign a set of your course in the offering with dates, attempt and release policies (instructors). Unset
    policies come from the set's problemset.yaml or the defaults (answer key after the attempts run out)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.ASSIGNMENTS)
    problem_set = service.problem_set_by_slug(session, body.problem_set)
    if not service.may_assign(session, principal.access, problem_set):
        raise NotFound(f"unknown problem set {body.problem_set!r}", field="problem_set")
    assignment = service.assign(
        session, offering=offering, problem_set=problem_set, published=body.published,
        **_policy_fields(session, body, problem_set.id),
    )  # fmt: skip
    session.commit()
    return _assignment_public(session, assignment)


@router.get("/assignments/{assignment_id}", response_model=AssignmentPublic)
def get_assignment(assignment_id: RowId, principal: PrincipalDep, session: SessionDep) -> AssignmentPublic:
    """One assignment of your offerings."""
    assignment = service.get_assignment(session, principal.access, assignment_id)
    return _assignment_public(session, assignment)


@router.patch("/assignments/{assignment_id}", response_model=AssignmentPublic)
def update_assignment(
    assignment_id: RowId, body: AssignmentUpdate, principal: PrincipalDep, session: SessionDep
) -> AssignmentPublic:
    """Change an assignment's dates, attempt or release policy, or publish a draft (instructors); only the fields
    sent change."""
    assignment = service.get_assignment(session, principal.access, assignment_id, Action.ASSIGNMENTS)
    service.update_assignment(session, assignment, **_policy_fields(session, body, assignment.problem_set_id))
    if body.published is True:
        service.publish(session, assignment, open_at=assignment.open_at, due_at=assignment.due_at)
    elif body.published is False and assignment.published_at is not None:
        drafts.unpublish(session, assignment)
    requeue_held(session, assignment.id)  # LMS scores the release policy held: posted now if it releases them
    session.commit()
    return _assignment_public(session, assignment)


@router.get("/assignments/{assignment_id}/overrides", response_model=list[OverridePublic])
def list_overrides(assignment_id: RowId, principal: PrincipalDep, session: SessionDep) -> list[OverridePublic]:
    """Extensions and extra attempts of an assignment (staff)."""
    assignment = service.get_assignment(session, principal.access, assignment_id, Action.VIEW_UNRELEASED)
    return [OverridePublic.model_validate(o) for o in assignment.overrides]


@router.post("/assignments/{assignment_id}/overrides", response_model=OverridePublic, status_code=201)
def add_override(
    assignment_id: RowId, body: OverrideCreate, principal: PrincipalDep, session: SessionDep
) -> OverridePublic:
    """Give one member (or a section) another due date, late penalty or extra attempts; a member's own override
    wins over their section's. Instructors, and TAs where the offering allows it."""
    assignment = service.get_assignment(session, principal.access, assignment_id, Action.OVERRIDES)
    member = None
    if body.member is not None or body.email:
        member = service.find_member(session, assignment.offering, member_id=body.member, email=body.email)
    override = service.set_override(
        session,
        assignment=assignment,
        member=member,
        section=body.section,
        due_at=body.due_at,
        late_penalty_per_day=body.late_penalty_per_day,
        extra_attempts=body.extra_attempts,
        time_multiplier=body.time_multiplier,
        note=body.note,
    )
    rescore(session, assignment, affected_users(session, override))  # late penalties and LMS scores, same transaction
    session.commit()
    return OverridePublic.model_validate(override)


@router.delete("/overrides/{override_id}", status_code=204)
def delete_override(override_id: RowId, principal: PrincipalDep, session: SessionDep) -> None:
    """Remove an override; the member falls back to their section's or the assignment's settings."""
    override = service.delete_override(session, principal.access, override_id)
    rescore(session, override.assignment, affected_users(session, override))  # late penalties and LMS scores
    session.commit()


@router.get("/offerings/{offering_id}/gradebook", response_model=list[Gradebook])
def offering_gradebook(offering_id: RowId, principal: PrincipalDep, session: SessionDep) -> list[Gradebook]:
    """The gradebook of every assignment of the offering (staff and observers)."""
    service.get_offering(session, principal.access, offering_id, Action.GRADEBOOK)
    found = service.visible_assignments(session, principal.access, offering_id=offering_id)
    return [
        gradebook.gradebook(session, access=principal.access, slug=f.problem_set.slug, offering_id=offering_id)
        for f in found
    ]


@router.get(
    "/offerings/{offering_id}/gradebook.csv", response_class=Response, responses={200: {"content": {"text/csv": {}}}}
)
def offering_gradebook_csv(offering_id: RowId, principal: PrincipalDep, session: SessionDep) -> Response:
    """The offering's gradebook as one CSV (email, name, student id, section, one column per set/problem, total),
    the layout Canvas and Moodle imports map by email or student id (staff and observers)."""
    offering = service.get_offering(session, principal.access, offering_id, Action.GRADEBOOK)
    found = service.visible_assignments(session, principal.access, offering_id=offering_id)
    books = [
        gradebook.gradebook(session, access=principal.access, slug=f.problem_set.slug, offering_id=offering_id)
        for f in found
    ]
    return Response(
        gradebook.offering_csv(books),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="gradebook-{offering.slug}.csv"'},
    )
