"""What a validated launch writes, in the caller's one transaction: the user (by issuer and sub), the context's
offering, the membership with the LTI role mapped to ours, the resource link's assignment.

A refusal here (a student in a course nobody set up) raises before anything is flushed for good: the caller rolls
the transaction back.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.courses import service as courses
from app.courses.access import access_for
from app.courses.models import Assignment, MemberRole, Membership, MemberSource, MemberStatus, Offering
from app.courses.permissions import STAFF_ROLES
from app.errors import Forbidden, NotFound
from app.lti import deep_linking
from app.lti.models import LtiContext, LtiPlatform, LtiResourceLink, LtiUser
from app.lti.registration import platform_for
from app.lti.roles import map_role
from app.lti.tool import Launch, LaunchRefused
from app.users.models import GlobalRole, User

RESOURCE_LINK = "LtiResourceLinkRequest"
DEEP_LINKING = "LtiDeepLinkingRequest"
NO_PASSWORD = "!lti"  # noqa: S105 - a marker that is no hash


def lti_user(session: Session, *, issuer: str, sub: str, email: str, name: str) -> User:
    """The user linked to (issuer, sub), created on the first launch. An email alone never links an account: if
    the launch's email belongs to an existing account that is not linked, the new account gets a placeholder."""
    link = session.scalar(select(LtiUser).where(LtiUser.issuer == issuer, LtiUser.sub == sub))
    if link is not None:
        user = session.get(User, link.user_id)
        assert user is not None
        if name and user.display_name != name:
            user.display_name = name
        return user
    email = email.strip().lower()
    taken = not email or "@" not in email or session.scalar(select(User.id).where(User.email == email)) is not None
    if taken:
        digest = hashlib.sha256(f"{issuer}\n{sub}".encode()).hexdigest()[:24]
        email = f"lti-{digest}@lti.invalid"
    # No password at all (not an argon2 hash, so no password ever verifies): this account logs in through its LMS.
    user = User(email=email, display_name=name, role=GlobalRole.USER, password_hash=NO_PASSWORD)
    session.add(user)
    session.flush()
    session.add(LtiUser(issuer=issuer, sub=sub, user_id=user.id))
    return user


def instructed_offerings(session: Session, user_id: int) -> list[Offering]:
    """The offerings the user instructs (an active instructor membership): where they may link an LMS course."""
    return list(
        session.scalars(
            select(Offering)
            .join(Membership, Membership.offering_id == Offering.id)
            .where(
                Membership.user_id == user_id, Membership.status == MemberStatus.ACTIVE,
                Membership.role == MemberRole.INSTRUCTOR,
            )
            .order_by(Offering.id)
        )
    )  # fmt: skip


def link_choices(session: Session, launch: Launch) -> list[Offering]:
    """The offerings the launching instructor may link this launch's LMS course to, when it is linked to none yet
    and its instructor has an account here that instructs some; empty: the launch goes on (and makes a new one)."""
    if not launch.context_id or map_role(launch.roles) is not MemberRole.INSTRUCTOR:
        return []
    platform = platform_for(session, launch.issuer, launch.client_id)
    known = session.scalar(
        select(LtiContext.id).where(LtiContext.platform_id == platform.id, LtiContext.context_id == launch.context_id)
    )
    link = session.scalar(select(LtiUser).where(LtiUser.issuer == launch.issuer, LtiUser.sub == launch.sub))
    user = session.get(User, link.user_id) if link is not None else None
    if known is not None or user is None or not user.is_active:
        return []
    return instructed_offerings(session, user.id)


def existing_lti_user(session: Session, launch: Launch) -> User:
    """The account already linked to the launch's (issuer, sub); the launch was refused if there is none."""
    link = session.scalar(select(LtiUser).where(LtiUser.issuer == launch.issuer, LtiUser.sub == launch.sub))
    user = session.get(User, link.user_id) if link is not None else None
    if user is None or not user.is_active:
        raise LaunchRefused("this LMS account has no active account here; open the tool from the LMS again")
    return user


def _context(
    session: Session, platform: LtiPlatform, launch: Launch, role: MemberRole, user: User, link_to: int | None
) -> LtiContext:
    if not launch.context_id:
        raise LaunchRefused("the launch names no course (context claim); launch the tool from inside a course")
    ctx = session.scalar(
        select(LtiContext).where(LtiContext.platform_id == platform.id, LtiContext.context_id == launch.context_id)
    )
    if ctx is None and link_to is not None:
        # The instructor's choice on the link page: only an offering they instruct (checked again here, at the write).
        if role is not MemberRole.INSTRUCTOR or link_to not in {o.id for o in instructed_offerings(session, user.id)}:
            raise Forbidden("you may link an LMS course only to an offering you instruct")
        ctx = LtiContext(platform_id=platform.id, context_id=launch.context_id, offering_id=link_to)
        session.add(ctx)
    if ctx is None:
        if role not in STAFF_ROLES:
            raise LaunchRefused("this course is not set up here yet: your instructor opens the tool from the LMS first")
        digest = hashlib.sha256(f"{platform.id}\n{launch.context_id}".encode()).hexdigest()[:12]
        title = launch.context_title or launch.context_label or "LMS course"
        course = courses.create_course(session, slug=f"lti-{digest}", title=title)
        offering = courses.create_offering(session, course=course, slug="lms", title=title)
        ctx = LtiContext(platform_id=platform.id, context_id=launch.context_id, offering_id=offering.id)
        session.add(ctx)
    ctx.deployment_id = launch.deployment_id
    ctx.title = launch.context_title or ctx.title
    # The service URLs may change between launches (a copied course): the newest launch wins.
    ctx.memberships_url = launch.memberships_url or ctx.memberships_url
    ctx.lineitems_url = launch.lineitems_url or ctx.lineitems_url
    ctx.ags_scopes = launch.ags_scopes or ctx.ags_scopes or []
    session.flush()
    return ctx


def upsert_member(
    session: Session, *, offering: Offering, user: User, role: MemberRole, name: str = "", lis_id: str = ""
) -> Membership:
    """The user's membership in the offering with the LMS's role, active again if it was dropped."""
    member = session.scalar(
        select(Membership).where(Membership.offering_id == offering.id, Membership.user_id == user.id)
    )
    if member is None:
        member = session.scalar(
            select(Membership).where(
                Membership.offering_id == offering.id, Membership.email == user.email, Membership.user_id.is_(None)
            )
        )
    if member is None:
        member = Membership(offering_id=offering.id, email=user.email, source=MemberSource.LTI)
        session.add(member)
    member.user_id, member.role, member.status = user.id, role, MemberStatus.ACTIVE
    member.name = name or member.name or user.display_name
    member.student_id = lis_id or member.student_id
    session.flush()
    return member


def _assignment(session: Session, ctx: LtiContext, launch: Launch, role: MemberRole, user: User) -> Assignment | None:
    link = session.scalar(
        select(LtiResourceLink).where(
            LtiResourceLink.context_id == ctx.id, LtiResourceLink.resource_link_id == launch.resource_link_id
        )
    )
    if link is not None:
        link.lineitem_url = launch.lineitem_url or link.lineitem_url
        return session.get(Assignment, link.assignment_id)
    slug = launch.custom.get("problem_set", "")
    if not slug:
        if role in STAFF_ROLES:
            return None  # staff land on the offering and pick a set (deep linking)
        raise LaunchRefused("this link is not connected to a problem set yet; ask your instructor")
    try:
        problem_set = courses.problem_set_by_slug(session, slug)
    except NotFound as exc:
        raise LaunchRefused(f"this link names a problem set that does not exist here ({slug!r})") from exc
    offering = session.get(Offering, ctx.offering_id)
    assert offering is not None
    assigned = session.scalar(
        select(Assignment).where(Assignment.offering_id == offering.id, Assignment.problem_set_id == problem_set.id)
    )
    # A link's custom parameters can be edited by LMS instructors (Moodle): naming a set is not enough to bring it
    # into the course; the launcher must be allowed to assign it here, as on our own pages.
    if assigned is None and not courses.may_assign(session, access_for(session, user), problem_set):
        raise LaunchRefused(f"this link names a problem set ({slug!r}) that you may not assign in this course")
    assignment = assigned or courses.assign(session, offering=offering, problem_set=problem_set, published=True)
    session.add(
        LtiResourceLink(
            context_id=ctx.id, resource_link_id=launch.resource_link_id, assignment_id=assignment.id,
            lineitem_url=launch.lineitem_url, title=launch.resource_link_title,
        )
    )  # fmt: skip
    session.flush()
    return assignment


@dataclass(frozen=True)
class Provisioned:
    user: User
    membership: Membership
    context: LtiContext
    assignment: Assignment | None


def provision(session: Session, launch: Launch, *, link_to: int | None = None) -> Provisioned:
    """Apply a validated launch: user, offering, membership and (for a resource link) the assignment.

    ``link_to``: the offering (one the launching instructor instructs) that an LMS course not linked yet is linked
    to, instead of a new one (the instructor's choice among ``link_choices``).
    """
    platform = platform_for(session, launch.issuer, launch.client_id)
    role = map_role(launch.roles)
    if role is None:
        # No context role (an empty roles claim, or only institution/system roles: an LMS admin not enrolled).
        raise LaunchRefused(
            "your LMS gives you no role in this course, so this tool has nothing to show you; if you should be "
            "in it, ask the course's instructor to enrol you there"
        )
    if launch.message_type == DEEP_LINKING and role not in STAFF_ROLES:
        raise LaunchRefused("only instructors pick problem sets for the LMS (deep linking)")
    if launch.message_type == DEEP_LINKING:
        deep_linking.return_url_of(launch.deep_linking or {})  # refused now, with nothing written, not at the answer
    if not launch.context_id:
        raise LaunchRefused("the launch names no course (context claim); launch the tool from inside a course")
    user = lti_user(session, issuer=launch.issuer, sub=launch.sub, email=launch.email, name=launch.name)
    if not user.is_active:
        raise LaunchRefused("this account is disabled here; ask an administrator")
    ctx = _context(session, platform, launch, role, user, link_to)
    offering = session.get(Offering, ctx.offering_id)
    assert offering is not None
    lis = launch.body.get("https://purl.imsglobal.org/spec/lti/claim/lis") or {}
    member = upsert_member(
        session,
        offering=offering,
        user=user,
        role=role,
        name=launch.name,
        lis_id=str(lis.get("person_sourcedid") or ""),
    )
    assignment = _assignment(session, ctx, launch, role, user) if launch.message_type == RESOURCE_LINK else None
    return Provisioned(user=user, membership=member, context=ctx, assignment=assignment)


def relink(session: Session, ctx: LtiContext, offering: Offering) -> None:
    """An admin moves an LMS course to another offering: its launches land there from now on, and each of its
    resource links opens the same set assigned in that offering (assigned there if it was not)."""
    ctx.offering_id = offering.id
    for link in session.scalars(select(LtiResourceLink).where(LtiResourceLink.context_id == ctx.id)):
        old = session.get(Assignment, link.assignment_id)
        assert old is not None
        moved = courses.ensure_assigned(session, offering=offering, problem_set=old.problem_set, published=True)
        link.assignment_id = moved.id
    session.flush()
