"""Courses, offerings, memberships and assignments: create, enrol, join, resolve a set to the caller's assignment."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from sqlalchemy import bindparam, select
from sqlalchemy.orm import Session

from app.courses.access import Access
from app.courses.models import (
    Assignment,
    Counts,
    Course,
    MemberRole,
    Membership,
    MemberSource,
    MemberStatus,
    Offering,
    Override,
    Release,
    Variants,
)
from app.courses.permissions import Action
from app.courses.policy import check_problem_policies
from app.db import utcnow
from app.errors import N_, Conflict, Forbidden, Invalid, NotFound
from app.problemsets.models import ProblemSet, ProblemSetVersion
from app.users.models import User

SLUG = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
DEMO_COURSE = ("attention-transformer", "Attention and Transformer")
# show_explanations of problemset.yaml -> when the explanation is released (the assignment's setting wins).
EXPLANATIONS = {"after_grading": Release.IMMEDIATELY, "after_due": Release.AFTER_DUE, "never": Release.NEVER}


def _slug(value: str, field: str) -> str:
    value = value.strip().lower()
    if not SLUG.match(value):
        raise Invalid(f"{value!r} is not a slug (lower-case letters, digits, - and _; at most 64)", field=field)
    return value


def check_zone(name: str) -> str:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise Invalid(
            f"unknown time zone {name!r} (use an IANA name such as Europe/Berlin)", field="time_zone"
        ) from exc
    return name


def create_course(session: Session, *, slug: str, title: str) -> Course:
    slug = _slug(slug, "slug")
    if session.scalar(select(Course.id).where(Course.slug == slug)) is not None:
        raise Conflict(f"a course {slug!r} already exists", field="slug")
    course = Course(slug=slug, title=title.strip() or slug)
    session.add(course)
    session.flush()
    return course


def get_course(session: Session, slug: str) -> Course:
    course = session.scalar(select(Course).where(Course.slug == slug))
    if course is None:
        raise NotFound(f"unknown course {slug!r}", field="course")
    return course


def create_offering(
    session: Session,
    *,
    course: Course,
    slug: str,
    title: str,
    time_zone: str = "UTC",
    starts_at: datetime | None = None,
    ends_at: datetime | None = None,
    is_default: bool = False,
) -> Offering:
    slug = _slug(slug, "slug")
    if session.scalar(select(Offering.id).where(Offering.course_id == course.id, Offering.slug == slug)):
        raise Conflict(f"course {course.slug!r} already has an offering {slug!r}", field="slug")
    if starts_at and ends_at and ends_at <= starts_at:
        raise Invalid("ends_at must be after starts_at", field="ends_at")
    offering = Offering(
        course_id=course.id,
        slug=slug,
        title=title.strip() or slug,
        time_zone=check_zone(time_zone),
        starts_at=starts_at,
        ends_at=ends_at,
        is_default=is_default,
    )
    session.add(offering)
    session.flush()
    return offering


def get_offering(session: Session, access: Access, offering_id: int, action: Action = Action.VIEW) -> Offering:
    """An offering the caller may ``action`` in; 404 when they have no role there (they learn nothing of it)."""
    access.require(offering_id, action, f"no offering {offering_id}")
    offering = session.get(Offering, offering_id)
    if offering is None:
        raise NotFound(f"no offering {offering_id}", field="offering")
    return offering


def my_offerings(session: Session, access: Access) -> list[Offering]:
    ids = access.offerings(Action.VIEW)
    if not ids:
        return []
    return list(session.scalars(select(Offering).where(Offering.id.in_(ids)).order_by(Offering.id)))


def home_offering(session: Session) -> Offering:
    """The default offering (legacy paths enrol and assign here), created with the demo course on a fresh database."""
    offering = session.scalar(select(Offering).where(Offering.is_default.is_(True)).order_by(Offering.id).limit(1))
    if offering is not None:
        return offering
    course = session.scalar(select(Course).where(Course.slug == DEMO_COURSE[0]))
    course = course or create_course(session, slug=DEMO_COURSE[0], title=DEMO_COURSE[1])
    return create_offering(session, course=course, slug="demo", title=DEMO_COURSE[1], is_default=True)


# --- memberships ---------------------------------------------------------------------------------------------------


def enroll(
    session: Session,
    *,
    offering: Offering,
    email: str,
    role: MemberRole = MemberRole.STUDENT,
    source: MemberSource = MemberSource.MANUAL,
    section: str = "",
    name: str = "",
    student_id: str = "",
    link_account: bool = True,
) -> Membership:
    """Add (or update) a member by email; linked to the account when there is one, else pending (invited).

    ``link_account`` False (an instructor's roster entry): an existing account is not linked either, the row stays
    invited until that person accepts it with the offering's invitation; an instructor cannot put a row on
    someone's account (or on an account someone made for an address that is not theirs). True for admins, the
    operator and the account's own holder (creating an offering, joining).
    """
    email = email.strip().lower()
    if "@" not in email or len(email) > 254:
        raise Invalid(N_("%(email)s is not an email address"), field="email", params={"email": repr(email)})
    user = session.scalar(select(User).where(User.email == email))
    member = session.scalar(select(Membership).where(Membership.offering_id == offering.id, Membership.email == email))
    if member is None:
        member = Membership(offering_id=offering.id, email=email, source=source)
        session.add(member)
    member.role, member.section = role, section or member.section
    member.name, member.student_id = name or member.name, student_id or member.student_id
    if user is None:
        member.user_id = None
    elif link_account:
        member.user_id = user.id
    # Linked: accepted once (or vouched for), so being added again makes it active (a dropped member back).
    member.status = MemberStatus.ACTIVE if member.user_id is not None else MemberStatus.INVITED
    session.flush()
    return member


def claim_pending(session: Session, user: User) -> int:
    """An account whose address is proven (app.courses.accounts.create_user's ``email_proven``, a mailed invitation)
    takes over the roster rows loaded for its email and not accepted yet."""
    rows = list(session.scalars(select(Membership).where(Membership.email == user.email, Membership.user_id.is_(None))))
    for row in rows:
        row.user_id = user.id
        if row.status == MemberStatus.INVITED:
            row.status = MemberStatus.ACTIVE
    return len(rows)


def members(session: Session, offering: Offering) -> list[Membership]:
    return list(
        session.scalars(select(Membership).where(Membership.offering_id == offering.id).order_by(Membership.email))
    )


def get_member(session: Session, offering: Offering, member_id: int) -> Membership:
    member = session.get(Membership, member_id)
    if member is None or member.offering_id != offering.id:
        raise NotFound(f"no member {member_id} in this offering", field="member")
    return member


def set_member(
    session: Session, member: Membership, *, role: MemberRole | None, status: MemberStatus | None, section: str | None
) -> Membership:
    if role is not None:
        member.role = role
    if status is not None:
        if status == MemberStatus.ACTIVE and member.user_id is None:
            # Also when an account of the email exists: that person accepts with the offering's invitation.
            raise Invalid(N_("a member stays invited until they accept the invitation"), field="status")
        member.status = status
    if section is not None:
        member.section = section.strip()
    session.flush()
    return member


def rotate_join_code(session: Session, offering: Offering, *, enabled: bool = True) -> str:
    offering.join_code = secrets.token_urlsafe(6).replace("-", "x").replace("_", "y")[:8].upper()
    offering.join_enabled = enabled
    session.flush()
    return offering.join_code


def join(session: Session, *, user: User, code: str) -> Membership:
    """Self-enrolment as a student with the offering's join code, until its cut-off."""
    offering = session.scalar(select(Offering).where(Offering.join_code == code.strip().upper()))
    if offering is None or not offering.join_enabled:
        raise NotFound(N_("no offering takes this join code"), field="code")
    if offering.self_join_until is not None and utcnow() > offering.self_join_until:
        raise Forbidden(N_("self-enrolment in this offering has closed; ask the instructor to add you"))
    existing = session.scalar(
        select(Membership).where(Membership.offering_id == offering.id, Membership.email == user.email)
    )
    if existing is not None:
        if existing.status == MemberStatus.DROPPED:
            raise Forbidden(N_("you were dropped from this offering; ask the instructor to add you again"))
        if existing.user_id != user.id:
            # A roster row the instructor made for this email (perhaps as TA, with a student id): a join code says
            # "in the room", not "owns the address", so it does not hand that row to whoever holds the account.
            raise Conflict(N_("you are on this offering's roster already: accept it with the invitation link your "
                              "instructor sends you"), field="code")  # fmt: skip
        existing.status = MemberStatus.ACTIVE
        session.flush()
        return existing
    return enroll(session, offering=offering, email=user.email, source=MemberSource.JOIN_CODE, name=user.display_name)


# --- assignments ---------------------------------------------------------------------------------------------------

POLICY_FIELDS = (
    "open_at",
    "due_at",
    "late_penalty_per_day",
    "max_late_days",
    "max_attempts",
    "cooldown_s",
    "decay_per_attempt",
    "counts",
    "release_scores",
    "release_feedback",
    "release_explanation",
    "release_answer_key",
    "problem_policies",
    "pinned_version_id",
    "time_limit_min",
    "new_variant_after",
    "variants",
)


def assign(session: Session, *, offering: Offering, problem_set: ProblemSet, **policy: Any) -> Assignment:
    """Put a set into an offering; policies not given come from the set's problemset.yaml or the defaults."""
    existing = session.scalar(
        select(Assignment).where(Assignment.offering_id == offering.id, Assignment.problem_set_id == problem_set.id)
    )
    if existing is not None:
        raise Conflict(N_("%(set)s is already assigned in this offering"), field="problem_set",
                       params={"set": repr(problem_set.slug)})  # fmt: skip
    latest = _latest_version(session, problem_set.id)
    shown = EXPLANATIONS.get((latest.spec if latest else {}).get("show_explanations", ""), Release.IMMEDIATELY)
    assignment = Assignment(
        offering_id=offering.id,
        problem_set_id=problem_set.id,
        release_explanation=shown,
        cooldown_s=0,
        decay_per_attempt=0.0,
        counts=Counts.BEST,
        release_scores=Release.IMMEDIATELY,
        release_feedback=Release.IMMEDIATELY,
        release_answer_key=Release.AFTER_ATTEMPTS,
        problem_policies={},
        # A set with parameters: each student their own numbers unless the instructor chooses otherwise.
        variants=Variants.PER_STUDENT if _has_parameters(latest) else Variants.SHARED,
    )
    session.add(assignment)
    update_assignment(session, assignment, **policy)
    return assignment


def update_assignment(session: Session, assignment: Assignment, **policy: Any) -> Assignment:
    unknown = set(policy) - set(POLICY_FIELDS)
    if unknown:
        raise Invalid(f"unknown assignment settings {sorted(unknown)}", field=sorted(unknown)[0])
    for key, value in policy.items():
        setattr(assignment, key, value)
    _check_policy(session, assignment)
    session.flush()
    return assignment


def _check_policy(session: Session, a: Assignment) -> None:
    if a.open_at and a.due_at and a.due_at <= a.open_at:
        raise Invalid(N_("due_at must be after open_at"), field="due_at")
    if a.max_attempts is not None and a.max_attempts < 1:
        raise Invalid(N_("max_attempts must be at least 1 (leave it out for unlimited)"), field="max_attempts")
    if a.time_limit_min is not None and a.time_limit_min < 1:
        raise Invalid(N_("time_limit_min is at least 1 minute (leave it out for untimed)"), field="time_limit_min")
    if a.new_variant_after is not None and a.new_variant_after < 1:
        raise Invalid(N_("new_variant_after is at least 1 attempt (leave it out to keep one variant)"),
                      field="new_variant_after")  # fmt: skip
    if a.variants not in set(Variants):
        raise Invalid(f"variants must be one of {[v.value for v in Variants]}", field="variants")
    if a.variants == Variants.SHARED and a.new_variant_after is not None:
        raise Invalid(N_("a variant all students share cannot change after N attempts: clear new_variant_after or "
                         "give each student their own variant"), field="new_variant_after")  # fmt: skip
    if a.cooldown_s < 0:
        raise Invalid(N_("cooldown_s cannot be negative"), field="cooldown_s")
    if not 0.0 <= a.decay_per_attempt <= 1.0:
        raise Invalid(N_("decay_per_attempt is a fraction between 0 and 1"), field="decay_per_attempt")
    if a.late_penalty_per_day is not None and not 0.0 <= a.late_penalty_per_day <= 1.0:
        raise Invalid(N_("late_penalty_per_day is a fraction between 0 and 1"), field="late_penalty_per_day")
    if a.counts not in set(Counts):
        raise Invalid(f"counts must be one of {[c.value for c in Counts]}", field="counts")
    for key in ("release_scores", "release_feedback", "release_explanation", "release_answer_key"):
        if getattr(a, key) not in set(Release):
            raise Invalid(f"{key} must be one of {[r.value for r in Release]}", field=key)
    if a.pinned_version_id is not None:
        version = session.get(ProblemSetVersion, a.pinned_version_id)
        if version is None or version.problem_set_id != a.problem_set_id:
            raise Invalid(N_("the pinned version is not a version of this set"), field="pinned_version")
    check_problem_policies(a.problem_policies or {})


def _has_parameters(version: ProblemSetVersion | None) -> bool:
    return version is not None and any(p.get("generator") for p in version.spec.get("problems", []))


def _latest_version(session: Session, problem_set_id: int) -> ProblemSetVersion | None:
    return session.scalar(
        select(ProblemSetVersion)
        .where(ProblemSetVersion.problem_set_id == problem_set_id)
        .order_by(ProblemSetVersion.number.desc())
        .limit(1)
    )


def version_of(session: Session, assignment: Assignment) -> ProblemSetVersion:
    """The version students of this assignment see: the pinned one, else the latest."""
    if assignment.pinned_version_id is not None:
        pinned = session.get(ProblemSetVersion, assignment.pinned_version_id)
        if pinned is not None:
            return pinned
    latest = _latest_version(session, assignment.problem_set_id)
    if latest is None:
        raise NotFound("this problem set has no version", field="problem_set")
    return latest


@dataclass(frozen=True)
class Assigned:
    assignment: Assignment
    problem_set: ProblemSet
    role: MemberRole


def visible_assignments(session: Session, access: Access, *, offering_id: int | None = None) -> list[Assigned]:
    """The assignments the caller may see: staff every one of their offerings', students the open ones of visible
    sets."""
    ids = access.offerings(Action.VIEW)
    if offering_id is not None:
        ids &= {offering_id}
    if not ids:
        return []
    rows = session.execute(
        select(Assignment, ProblemSet)
        .join(ProblemSet, Assignment.problem_set_id == ProblemSet.id)
        .where(Assignment.offering_id.in_(ids))
        .order_by(Assignment.offering_id, ProblemSet.slug)
    ).all()
    now = utcnow()
    out = []
    for assignment, problem_set in rows:
        role = access.role_in(assignment.offering_id)
        assert role is not None
        if access.can(assignment.offering_id, Action.VIEW_UNRELEASED) or _is_open(assignment, problem_set, now):
            out.append(Assigned(assignment, problem_set, role))
    return out


def _is_open(assignment: Assignment, problem_set: ProblemSet, now: datetime) -> bool:
    return problem_set.is_visible and (assignment.open_at is None or now >= assignment.open_at)


class Ambiguous(Invalid):
    """A set assigned in several of the caller's offerings, asked for without one: the ids to choose from.

    The API answers 422 with the ids in the message and as ``offerings``; the set page shows a chooser instead.
    """

    def __init__(self, slug: str, offering_ids: list[int]) -> None:
        super().__init__(f"{slug!r} is assigned in several of your offerings {offering_ids}; say which with "
                         "'offering'", field="offering", extra={"offerings": offering_ids})  # fmt: skip
        self.offering_ids = offering_ids


def resolve(
    session: Session, access: Access, slug: str, *, offering_id: int | None = None, action: Action = Action.VIEW
) -> Assigned:
    """The caller's assignment of set ``slug`` (in ``offering_id`` when given). 404 when they cannot see one."""
    found = [a for a in visible_assignments(session, access, offering_id=offering_id) if a.problem_set.slug == slug]
    if not found:
        raise NotFound(f"unknown problem set {slug!r}", field="problem_set")
    if len(found) > 1:
        raise Ambiguous(slug, sorted(a.assignment.offering_id for a in found))
    access.require(found[0].assignment.offering_id, action, f"unknown problem set {slug!r}")
    return found[0]


def get_assignment(session: Session, access: Access, assignment_id: int, action: Action = Action.VIEW) -> Assignment:
    """An assignment of the caller's offerings; to a student only once it is open (as visible_assignments lists),
    else 404 like one that does not exist (before the role check: a 403 would tell them it is there)."""
    assignment = session.get(Assignment, assignment_id)
    offering_id = assignment.offering_id if assignment else None
    if (
        assignment is not None
        and not access.can(offering_id, Action.VIEW_UNRELEASED)
        and not _is_open(assignment, assignment.problem_set, utcnow())
    ):
        offering_id = None
    access.require(offering_id, action, f"no assignment {assignment_id}")
    assert assignment is not None
    return assignment


def default_assignment(session: Session, problem_set: ProblemSet) -> Assignment:
    """Sets loaded from disk (serve, `problems load`) are assigned in the default offering, once."""
    return ensure_assigned(session, offering=home_offering(session), problem_set=problem_set)


_MEMBER = select(Membership).where(
    Membership.offering_id == bindparam("offering_id"), Membership.user_id == bindparam("user_id")
)  # built once: every store and every seal asks


def member_of(session: Session, offering_id: int, user_id: int) -> Membership | None:
    return session.scalar(_MEMBER, {"offering_id": offering_id, "user_id": user_id})


def offerings_with_set(session: Session, problem_set: ProblemSet) -> set[int]:
    return set(session.scalars(select(Assignment.offering_id).where(Assignment.problem_set_id == problem_set.id)))


def ensure_assigned(session: Session, *, offering: Offering, problem_set: ProblemSet) -> Assignment:
    existing = session.scalar(
        select(Assignment).where(Assignment.offering_id == offering.id, Assignment.problem_set_id == problem_set.id)
    )
    return existing or assign(session, offering=offering, problem_set=problem_set)


def find_member(session: Session, offering: Offering, *, member_id: int | None, email: str | None) -> Membership:
    if member_id is not None:
        return get_member(session, offering, member_id)
    member = session.scalar(
        select(Membership).where(
            Membership.offering_id == offering.id, Membership.email == (email or "").strip().lower()
        )
    )
    if member is None:
        raise NotFound(N_("%(email)s is not on this offering's roster"), field="email", params={"email": repr(email)})

    return member


def set_override(
    session: Session,
    *,
    assignment: Assignment,
    member: Membership | None,
    section: str | None,
    due_at: datetime | None,
    late_penalty_per_day: float | None,
    extra_attempts: int,
    time_multiplier: float,
    note: str,
) -> Override:
    """One override per member (or per section) of an assignment: a second one for the same target replaces it."""
    if (member is None) == (not section):
        raise Invalid(N_("give a member (id or email) or a section, not both"), field="member")
    existing = next(
        (
            o
            for o in assignment.overrides
            if (member is not None and o.membership_id == member.id)
            or (member is None and o.membership_id is None and o.section == section)
        ),
        None,
    )
    override = existing or Override(assignment_id=assignment.id)
    override.membership_id = member.id if member is not None else None
    override.section = None if member is not None else section
    override.due_at, override.late_penalty_per_day = due_at, late_penalty_per_day
    override.extra_attempts, override.time_multiplier, override.note = extra_attempts, time_multiplier, note
    if existing is None:
        assignment.overrides.append(override)
    session.flush()
    return override


def delete_override(session: Session, access: Access, override_id: int) -> Override:
    """Remove an override; returns it (deleted) so the caller can rescore whom it applied to."""
    override = session.get(Override, override_id)
    offering_id = override.assignment.offering_id if override is not None else None
    access.require(offering_id, Action.OVERRIDES, f"no override {override_id}")
    assert override is not None
    session.delete(override)
    session.flush()
    return override


def problem_set_by_slug(session: Session, slug: str) -> ProblemSet:
    problem_set = session.scalar(select(ProblemSet).where(ProblemSet.slug == slug))
    if problem_set is None:
        raise NotFound(f"unknown problem set {slug!r}", field="problem_set")
    return problem_set


def may_assign(session: Session, access: Access, problem_set: ProblemSet) -> bool:
    """A set can be assigned by whoever may upload in an offering that already has it (its course's staff), or an
    admin; a set from another course is not reachable by name alone."""
    return access.is_admin or bool(offerings_with_set(session, problem_set) & access.offerings(Action.UPLOAD))
