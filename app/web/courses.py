"""Course pages: my courses, a course home with its assignments, the roster with CSV import and preview and
one person's add, role, section and drop (a role change and a drop confirmed on a second step), an
assignment's settings and overrides, joining by code. Every page asks app.courses.permissions through Access."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.datastructures import FormData, UploadFile

from app.courses import invitations, roster
from app.courses import service as courses
from app.courses.access import Access, access_for
from app.courses.models import Counts, MemberRole, Membership, MemberStatus, Offering, Release
from app.courses.permissions import Action
from app.courses.schemas import Policy
from app.deps import RowId
from app.errors import DomainError, Forbidden, Invalid
from app.gradebook.overrides import affected_users, rescore
from app.gradebook.row import student_row
from app.input_types import to_utc
from app.lti.passback import requeue_held
from app.problemsets.models import ProblemSet
from app.users.models import User
from app.web.deps import (
    CheckedForm,
    LimitUnauthenticated,
    MaybeUser,
    WebSession,
    WebSettings,
    WebUser,
    rotate_csrf,
)
from app.web.i18n import N_, error_text, for_request
from app.web.page_route import WebRoute
from app.web.rendering import render
from graders.input_limits import MAX_CSV_BYTES

router = APIRouter(route_class=WebRoute)
RELEASES = [r.value for r in Release]
# The settings form's own fields: every policy of the service but the per-problem table (read by _problem_policies)
# and the pinned version (not set on this page).
POLICY_KEYS = tuple(key for key in courses.POLICY_FIELDS if key not in ("problem_policies", "pinned_version_id"))


def _text(form: FormData, key: str) -> str:
    value = form.get(key)
    return value.strip() if isinstance(value, str) else ""


def _local(value: str, zone: str) -> datetime | None:
    """A datetime-local field, read in the offering's time zone and stored absolute (UTC)."""
    if not value:
        return None
    try:
        naive = datetime.fromisoformat(value)
    except ValueError as exc:
        raise Invalid(f"{value!r} is not a date and time") from exc
    return to_utc(naive, ZoneInfo(zone))  # ValueError out of range: the form's error, like a bad spelling


@router.get("/courses")
def my_courses(request: Request, user: WebUser, session: WebSession) -> Response:
    """The offerings you are a member of, by course, with your role; admins can create courses here."""
    access = access_for(session, user)
    offerings = courses.my_offerings(session, access)
    return render(
        request,
        "courses/index.html",
        offerings=[(o, access.role_in(o.id)) for o in offerings],
        can_create=user.is_admin,
        teaches={o.course.slug for o in offerings if access.can(o.id, Action.EDIT_OFFERING)},
    )


@router.post("/courses")
def create_course(request: Request, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Create a course and its first offering (admins); the creator becomes its instructor."""
    if not user.is_admin:
        raise Forbidden(for_request(request).gettext("Only admins create courses."))
    course = courses.create_course(session, slug=_text(form, "slug"), title=_text(form, "title"))
    offering = _new_offering(session, user, course.slug, form)
    session.commit()
    return RedirectResponse(f"/offerings/{offering.id}", status_code=303)


@router.post("/courses/{slug}/offerings")
def create_offering(request: Request, slug: str, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Add an offering to a course you teach (or any, as admin)."""
    access = access_for(session, user)
    teaches = any(
        o.course.slug == slug and access.can(o.id, Action.EDIT_OFFERING) for o in courses.my_offerings(session, access)
    )
    if not (user.is_admin or teaches):
        raise Forbidden(for_request(request).gettext("You do not teach this course."))
    offering = _new_offering(session, user, slug, form)
    session.commit()
    return RedirectResponse(f"/offerings/{offering.id}", status_code=303)


def _new_offering(session: WebSession, user: User, slug: str, form: FormData) -> Offering:
    offering = courses.create_offering(
        session,
        course=courses.get_course(session, slug),
        slug=_text(form, "offering_slug") or "main",
        title=_text(form, "offering_title") or _text(form, "title") or slug,
        time_zone=_text(form, "time_zone") or "UTC",
    )
    courses.enroll(session, offering=offering, email=user.email, role=MemberRole.INSTRUCTOR)
    return offering


def _home(
    request: Request, session: WebSession, access: Access, offering: Offering, status: int = 200, **extra: Any
) -> Response:
    found = courses.visible_assignments(session, access, offering_id=offering.id)
    assignable: list[ProblemSet] = []
    if access.can(offering.id, Action.ASSIGNMENTS):
        taken = {f.problem_set.id for f in found}
        assignable = [
            ps
            for ps in session.query(ProblemSet).order_by(ProblemSet.slug)
            if ps.id not in taken and courses.may_assign(session, access, ps)
        ]
    return render(
        request,
        "courses/home.html",
        status,
        offering=offering,
        assignments=found,
        role=access.role_in(offering.id),
        can=lambda action: access.can(offering.id, Action(action)),
        assignable=assignable,
        **extra,
    )


@router.get("/offerings/{offering_id}")
def course_home(request: Request, offering_id: RowId, user: WebUser, session: WebSession) -> Response:
    """An offering's assignments with their dates in the offering's time zone; staff links to the rest."""
    access = access_for(session, user)
    return _home(request, session, access, courses.get_offering(session, access, offering_id))


@router.post("/offerings/{offering_id}/assignments")
def assign(request: Request, offering_id: RowId, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Assign a set (instructors), then go to its settings."""
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.ASSIGNMENTS)
    problem_set = courses.problem_set_by_slug(session, _text(form, "problem_set"))
    if not courses.may_assign(session, access, problem_set):
        raise Forbidden(for_request(request).gettext("That set belongs to a course you do not teach."))
    assignment = courses.assign(session, offering=offering, problem_set=problem_set)
    session.commit()
    return RedirectResponse(f"/assignments/{assignment.id}/settings", status_code=303)


@router.post("/offerings/{offering_id}/join-code")
def rotate_code(
    request: Request, offering_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.ROSTER)
    courses.rotate_join_code(session, offering, enabled=_text(form, "enabled") != "off")
    session.commit()
    return RedirectResponse(f"/offerings/{offering_id}/roster", status_code=303)


# --- roster --------------------------------------------------------------------------------------------------------


def _roster_page(
    request: Request, session: WebSession, access: Access, offering: Offering, status: int = 200, **extra: Any
) -> Response:
    saved = request.query_params.get("saved", "")
    extra.setdefault("saved", int(saved) if saved.isascii() and saved.isdigit() and len(saved) < 19 else None)
    return render(
        request,
        "courses/roster.html",
        status,
        offering=offering,
        members=courses.members(session, offering),
        can_edit=access.can(offering.id, Action.ROSTER),
        roles=ROLE_NAMES,
        statuses=STATUS_NAMES,
        **extra,
    )


@router.get("/offerings/{offering_id}/roster")
def roster_page(request: Request, offering_id: RowId, user: WebUser, session: WebSession) -> Response:
    """The roster (staff and observers), with the CSV import for instructors."""
    access = access_for(session, user)
    return _roster_page(request, session, access, courses.get_offering(session, access, offering_id, Action.GRADEBOOK))


@router.post("/offerings/{offering_id}/roster")
async def import_roster(
    request: Request, offering_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    """Preview a CSV (nothing written), then apply the previewed file in one transaction."""
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.ROSTER)
    upload = form.get("file")
    # One byte over the bound, so that roster.parse refuses a longer file instead of reading its first part.
    data = (await upload.read(MAX_CSV_BYTES + 1)) if isinstance(upload, UploadFile) else _text(form, "csv").encode()
    drop = _text(form, "drop_missing") == "on"
    try:
        result = roster.diff(session, offering, roster.parse(data), drop_missing=drop)
    except roster.RosterInvalid as exc:
        return _roster_page(
            request, session, access, offering, 422, error=exc.message, bad_rows=exc.extra.get("errors", [])
        )
    if _text(form, "apply") == "yes":
        roster.apply(session, offering, result, link_accounts=user.is_admin)
        session.commit()
        return _roster_page(request, session, access, offering, applied=result)
    return _roster_page(
        request, session, access, offering, preview=result, csv_text=data.decode("utf-8-sig"), drop=drop
    )


@router.post("/offerings/{offering_id}/members/{member_id}/invite")
def invite_member(
    request: Request,
    offering_id: RowId,
    member_id: RowId,
    form: CheckedForm,
    user: WebUser,
    session: WebSession,
    settings: WebSettings,
) -> Response:
    """A one-time set-password link for an invited member: mailed with SMTP configured, else shown here once."""
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.ROSTER)
    member = courses.get_member(session, offering, member_id)
    sent = invitations.invite(session, settings, member, base_url=settings.public_url, title=offering.title)
    return _roster_page(request, session, access, offering, invited=sent)


# --- one person of the roster: add, change role or section, drop (the API's service calls, the same checks) -------


# How the pages name roles and statuses (translated where shown).
ROLE_NAMES = {MemberRole.INSTRUCTOR: N_("instructor"), MemberRole.TA: N_("TA"), MemberRole.STUDENT: N_("student"),
              MemberRole.OBSERVER: N_("observer")}  # fmt: skip
STATUS_NAMES = {MemberStatus.INVITED: N_("invited"), MemberStatus.ACTIVE: N_("active"),
                MemberStatus.DROPPED: N_("dropped")}  # fmt: skip


def _role(text: str) -> MemberRole:
    try:
        return MemberRole(text or MemberRole.STUDENT)
    except ValueError as exc:
        raise Invalid(N_("Choose a role from the list."), field="role") from exc


def _to_roster(offering_id: int, member: Membership) -> Response:
    return RedirectResponse(f"/offerings/{offering_id}/roster?saved={member.id}#member-{member.id}", status_code=303)


@router.post("/offerings/{offering_id}/members")
def add_member(request: Request, offering_id: RowId, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    """Add one person by email (instructors), as POST /api/v1/offerings/{id}/members: invited until they accept the
    offering's invitation (an admin's entry for an existing account is active at once). Someone on the roster
    already is changed on their own page (a role change is confirmed there), not here."""
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.ROSTER)
    fields = {key: _text(form, key) for key in ("email", "name", "role", "section", "student_id")}
    try:
        role = _role(fields["role"])
        email = fields["email"].lower()
        if any(m.email == email for m in courses.members(session, offering)):
            raise Invalid(N_("%(email)s is on the roster already; change them in the table below."), field="email",
                          params={"email": email})  # fmt: skip
        member = courses.enroll(
            session,
            offering=offering,
            email=email,
            role=role,
            section=fields["section"][:64],
            name=fields["name"][:200],
            student_id=fields["student_id"][:64],
            link_account=user.is_admin,
        )
    except DomainError as exc:
        session.rollback()
        return _roster_page(request, session, access, offering, 422, add_error=error_text(request, exc), add=fields)
    session.commit()
    return _to_roster(offering_id, member)


def _member_page(
    request: Request, session: WebSession, offering: Offering, member: Membership, status: int = 200, **extra: Any
) -> Response:
    return render(
        request, "courses/member.html", status, offering=offering, m=member, roles=ROLE_NAMES, statuses=STATUS_NAMES,
        sections=sorted({m.section for m in courses.members(session, offering) if m.section}), **extra,
    )  # fmt: skip


@router.get("/offerings/{offering_id}/members/{member_id}")
def member_page(request: Request, offering_id: RowId, member_id: RowId, user: WebUser, session: WebSession) -> Response:
    """One person of the roster (instructors): their role and section, drop or bring back."""
    offering = courses.get_offering(session, access_for(session, user), offering_id, Action.ROSTER)
    return _member_page(request, session, offering, courses.get_member(session, offering, member_id))


@router.post("/offerings/{offering_id}/members/{member_id}")
def change_member(
    request: Request, offering_id: RowId, member_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    """``do=save``: the role and section; ``do=drop``; ``do=reactivate``. A role change and a drop write nothing
    until the confirmation step sends ``confirm=yes`` (the page asks first); a section move alone is written."""
    offering = courses.get_offering(session, access_for(session, user), offering_id, Action.ROSTER)
    member = courses.get_member(session, offering, member_id)
    action, confirmed = _text(form, "do"), _text(form, "confirm") == "yes"
    try:
        if action == "drop":
            if not confirmed:
                return _member_page(request, session, offering, member, confirm="drop")
            courses.set_member(session, member, role=None, status=MemberStatus.DROPPED, section=None)
        elif action == "reactivate":
            courses.set_member(session, member, role=None, status=MemberStatus.ACTIVE, section=None)
        else:
            role, section = _role(_text(form, "role")), _text(form, "section")[:64]
            if role != member.role and not confirmed:
                return _member_page(request, session, offering, member, confirm="role", new_role=role,
                                    new_section=section)  # fmt: skip
            courses.set_member(
                session, member, role=role if role != member.role else None, status=None, section=section
            )
    except DomainError as exc:
        session.rollback()
        return _member_page(request, session, offering, member, 422, error=error_text(request, exc))
    session.commit()
    return _to_roster(offering_id, member)


# --- a student's row of the gradebook ------------------------------------------------------------------------------


def _row_page(request: Request, session: WebSession, user: User, offering_id: int, user_id: int) -> Response:
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id)
    member, rows = student_row(session, access, offering, user_id=user_id)
    return render(request, "courses/grades.html", offering=offering, member=member, rows=rows)


@router.get("/offerings/{offering_id}/grades")
def my_grades(request: Request, offering_id: RowId, user: WebUser, session: WebSession) -> Response:
    """Your own row of the gradebook: each assignment's problems with your counted score (as released) and your
    submissions."""
    return _row_page(request, session, user, offering_id, user.id)


@router.get("/offerings/{offering_id}/grades/{user_id}")
def student_grades(
    request: Request, offering_id: RowId, user_id: RowId, user: WebUser, session: WebSession
) -> Response:
    """Staff who may read submissions: 303 to a student's page (their row and submissions), another member's row
    here; your own id: your row; another student or an observer 403, anyone outside the offering 404."""
    member = courses.member_of(session, offering_id, user_id)
    is_student = member is not None and member.role == MemberRole.STUDENT
    if user_id != user.id and is_student and access_for(session, user).can(offering_id, Action.READ_SUBMISSIONS):
        # A student's row and submissions are one staff page now; old links (bookmarks, exported URLs) land there.
        # Other members (a TA who submits too) keep this page: the students page lists students only.
        return RedirectResponse(f"/offerings/{offering_id}/students/{user_id}", status_code=303)
    return _row_page(request, session, user, offering_id, user_id)


# --- invitations: set a password -----------------------------------------------------------------------------------


def _not_logged_in(request: Request, user: User | None) -> None:
    if user is not None:
        # Whoever is logged in here is not the invited person (they have no account yet): never mix the two.
        message = for_request(request).gettext(
            "You are logged in as %(email)s; this link is for someone without an account. Log out first, or pass "
            "the link on to the person it was made for."
        )
        raise Forbidden(message % {"email": user.email})


def _invite_page(
    request: Request, session: WebSession, user: User | None, token: str, status: int = 200, **extra: Any
) -> Response:
    _, member = invitations.pending(session, token)
    account = invitations.account_of(session, member)
    if account is None:
        _not_logged_in(request, user)
        return render(request, "courses/invite.html", status, email=member.email, token=token, **extra)
    # The email has an account: that account, logged in, accepts this one offering (no password is set here).
    if user is not None and user.id != account.id:
        raise Forbidden(invitations.NOT_YOURS, params={"email": member.email})
    return render(request, "courses/invite.html", status, email=member.email, token=token, joining=member.offering,
                  role=member.role, logged_in=user is not None, **extra)  # fmt: skip


@router.get("/invite/{token}", dependencies=[LimitUnauthenticated])
def invite_page(request: Request, token: str, user: MaybeUser, session: WebSession) -> Response:
    """An invitation link: the set-password form (no account yet), or the account's accept button (log in first);
    410 for a used, expired or unknown one."""
    return _invite_page(request, session, user, token[:100])


@router.post("/invite/{token}", dependencies=[LimitUnauthenticated])
def accept_invite(request: Request, token: str, form: CheckedForm, user: MaybeUser, session: WebSession) -> Response:
    """Accept: set the password (a new account) or join as the logged-in account of the email. The invitation's
    membership becomes active (not the email's rows elsewhere, unless the server mailed the link), the link is used
    up."""
    token = token[:100]
    _, member = invitations.pending(session, token)
    if invitations.account_of(session, member) is not None:
        if user is None:
            return RedirectResponse(f"/login?next=/invite/{token}", status_code=303)
        joined = invitations.accept_as(session, token, user=user)
        session.commit()
        return RedirectResponse(f"/offerings/{joined.offering_id}", status_code=303)
    _not_logged_in(request, user)  # accept() refuses a used, expired, unknown or taken link
    try:
        made = invitations.accept(
            session, token, password=str(form.get("password") or ""), confirm=str(form.get("confirm") or "")
        )
    except Invalid as exc:
        session.rollback()
        return _invite_page(request, session, user, token, 422, error=error_text(request, exc))
    session.commit()
    rotate_csrf(request)
    return render(
        request,
        "login.html",
        next="/courses",
        email=made.email,
        notice=for_request(request).gettext("Your password is set. Log in."),
    )


# --- assignment settings and overrides -----------------------------------------------------------------------------


def _settings_page(
    request: Request, session: WebSession, access: Access, assignment_id: int, status: int = 200, **extra: Any
) -> Response:
    assignment = courses.get_assignment(session, access, assignment_id, Action.VIEW_UNRELEASED)
    offering = assignment.offering
    members = {m.id: m for m in courses.members(session, offering)}
    return render(
        request,
        "courses/assignment.html",
        status,
        a=assignment,
        offering=offering,
        releases=RELEASES,
        counts=[c.value for c in Counts],
        members=members,
        problems=[(p["id"], p.get("title", p["id"])) for p in courses.version_of(session, assignment).spec["problems"]],
        per_problem=PER_PROBLEM,
        can_edit=access.can(offering.id, Action.ASSIGNMENTS),
        can_override=access.can(offering.id, Action.OVERRIDES),
        local=_to_local,
        **extra,
    )


# The per-problem settings the page offers (form fields "problem.<id>.<key>"; blank: the assignment's).
# The labels are translated where the page shows them.
PER_PROBLEM = (
    ("max_attempts", N_("attempts")),
    ("cooldown_s", N_("cooldown (s)")),
    ("decay_per_attempt", N_("decay")),
    ("counts", N_("counts")),
    ("scores", N_("scores")),
    ("feedback", N_("feedback")),
    ("explanation", N_("explanation")),
    ("answer_key", N_("answer key")),
)


def _problem_policies(form: FormData, problem_ids: list[str]) -> dict[str, Any]:
    """The per-problem table of the form as ``problem_policies``; blank cells inherit (checked by the service)."""
    out: dict[str, Any] = {}
    for pid in problem_ids:
        entry: dict[str, Any] = {}
        for key, _ in PER_PROBLEM:
            text = _text(form, f"problem.{pid}.{key}")
            if not text:
                continue
            if key in ("max_attempts", "cooldown_s"):
                entry[key] = int(text)
            elif key == "decay_per_attempt":
                entry[key] = float(text)
            elif key == "counts":
                entry[key] = text
            else:
                entry.setdefault("release", {})[key] = text
        if entry:
            out[pid] = entry
    return out


# Blank fields: None means "unlimited" or "the set's own policy".
_INTS: dict[str, int | None] = {"max_attempts": None, "max_late_days": None, "cooldown_s": 0, "time_limit_min": None,
                                  "new_variant_after": None}  # fmt: skip
_FLOATS: dict[str, float | None] = {"late_penalty_per_day": None, "decay_per_attempt": 0.0}


def _to_local(value: datetime | None, zone: str) -> str:
    return value.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%dT%H:%M") if value else ""


@router.get("/assignments/{assignment_id}/settings")
def assignment_settings(request: Request, assignment_id: RowId, user: WebUser, session: WebSession) -> Response:
    """Dates (in the offering's time zone), attempts, release policy, and the overrides (staff)."""
    return _settings_page(request, session, access_for(session, user), assignment_id)


@router.post("/assignments/{assignment_id}/settings")
def save_settings(
    request: Request, assignment_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    access = access_for(session, user)
    assignment = courses.get_assignment(session, access, assignment_id, Action.ASSIGNMENTS)
    zone = assignment.offering.time_zone
    raw: dict[str, Any] = {}
    try:
        for key in POLICY_KEYS:
            text = _text(form, key)
            if key in ("open_at", "due_at"):
                raw[key] = _local(text, zone)
            elif key in _INTS:
                raw[key] = int(text) if text else _INTS[key]
            elif key in _FLOATS:
                raw[key] = float(text) if text else _FLOATS[key]
            elif key == "variants" and not text:
                continue  # a form from before the choice: the assignment keeps its own
            else:
                raw[key] = text
        policy = Policy.model_validate(raw).model_dump(
            exclude={"pinned_version", "problem_policies"}, exclude_unset=True
        )
        problem_ids = [p["id"] for p in courses.version_of(session, assignment).spec["problems"]]
        if _text(form, "per_problem") == "shown":  # the table was on the page (an older form leaves them alone)
            policy["problem_policies"] = _problem_policies(form, problem_ids)
        courses.update_assignment(session, assignment, **policy)
        requeue_held(session, assignment.id)  # LMS scores the release policy held: posted now if released
    except (ValueError, DomainError) as exc:
        session.rollback()
        message = error_text(request, exc) if isinstance(exc, DomainError) else _not_understood(request, exc)
        return _settings_page(request, session, access, assignment_id, 422, error=message)
    session.commit()
    return _settings_page(request, session, access, assignment_id, saved=True)


@router.post("/assignments/{assignment_id}/overrides")
def add_override(
    request: Request, assignment_id: RowId, form: CheckedForm, user: WebUser, session: WebSession
) -> Response:
    """An extension or extra attempts for one student (by email) or a section."""
    access = access_for(session, user)
    assignment = courses.get_assignment(session, access, assignment_id, Action.OVERRIDES)
    try:
        email = _text(form, "email")
        member = courses.find_member(session, assignment.offering, member_id=None, email=email) if email else None
        override = courses.set_override(
            session,
            assignment=assignment,
            member=member,
            section=_text(form, "section") or None,
            due_at=_local(_text(form, "due_at"), assignment.offering.time_zone),
            late_penalty_per_day=None,
            extra_attempts=int(_text(form, "extra_attempts") or 0),
            time_multiplier=_multiplier(request, _text(form, "time_multiplier")),
            note=_text(form, "note")[:300],
        )
        rescore(session, assignment, affected_users(session, override))  # late penalties and LMS scores
    except (ValueError, DomainError) as exc:
        session.rollback()
        message = error_text(request, exc) if isinstance(exc, DomainError) else _not_understood(request, exc)
        return _settings_page(request, session, access, assignment_id, 422, override_error=message)
    session.commit()
    return RedirectResponse(f"/assignments/{assignment_id}/settings", status_code=303)


def _not_understood(request: Request, exc: Exception) -> str:
    return for_request(request).gettext("Not understood: %(error)s") % {"error": exc}


def _multiplier(request: Request, text: str) -> float:
    value = float(text) if text else 1.0
    if not 1.0 <= value <= 10.0:
        raise Invalid(
            for_request(request).gettext("The time multiplier is between 1 and 10 (1.5: half as much time again).")
        )
    return value


# --- joining -------------------------------------------------------------------------------------------------------


@router.get("/join/{code}")
def join_page(request: Request, code: str, user: WebUser) -> Response:
    return render(request, "courses/join.html", code=code[:32])


@router.post("/join/{code}")
def join(request: Request, code: str, form: CheckedForm, user: WebUser, session: WebSession) -> Response:
    member = courses.join(session, user=user, code=code[:32])
    session.commit()
    return RedirectResponse(f"/offerings/{member.offering_id}", status_code=303)
