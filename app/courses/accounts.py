"""Accounts as the courses see them: a new account joins the home offering and takes over its email's pending
roster rows; a token's scopes and offering are checked against its holder's memberships.

They live here, not in app.users, because users sits below courses: a user knows nothing of offerings.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.courses import service as courses
from app.courses.access import access_for
from app.courses.models import MemberRole
from app.courses.permissions import Action
from app.errors import N_, Conflict, Invalid
from app.security import generate_password, generate_token, hash_password, hash_token
from app.users.models import ApiToken, GlobalRole, Role, User
from app.users.service import DEFAULT_SCOPES, SCOPES, STAFF_SCOPES, check_password


def create_user(
    session: Session,
    *,
    email: str,
    role: Role,
    password: str | None = None,
    display_name: str = "",
    enroll_default: bool = True,
    email_proven: bool = True,
) -> tuple[User, str]:
    """Create a user; returns (user, password). A random password is generated when none is given.

    ``role`` admin makes a global admin; any other role enrols the user with it in the default offering (unless
    ``enroll_default`` is False). With ``email_proven`` (an admin or the operator made the account, or a link the
    server mailed to the address was used) the user takes over the roster rows loaded for their email before the
    account existed; without it (a link handed to an instructor) those rows stay pending for their own offerings'
    invitations.
    """
    email = email.strip().lower()
    if "@" not in email or len(email) > 254:
        raise Invalid(N_("%(email)s is not an email address"), field="email", params={"email": repr(email)})
    if session.scalar(select(User).where(User.email == email)) is not None:
        raise Conflict(N_("a user with email %(email)s already exists"), field="email", params={"email": repr(email)})
    password = password or generate_password()
    check_password(password)
    global_role = GlobalRole.ADMIN if role == Role.ADMIN else GlobalRole.USER
    user = User(email=email, role=global_role, password_hash=hash_password(password), display_name=display_name)
    session.add(user)
    session.flush()
    if email_proven:
        courses.claim_pending(session, user)
    if role != Role.ADMIN and enroll_default:
        courses.enroll(
            session, offering=courses.home_offering(session), email=email, role=MemberRole(role), name=display_name
        )
    return user, password


def create_token(
    session: Session,
    *,
    user: User,
    name: str,
    scopes: list[str] | None = None,
    expires_at: datetime | None = None,
    offering_id: int | None = None,
) -> tuple[ApiToken, str]:
    """Create an API token; the plain value is returned once and never stored.

    The token acts with its user's memberships; ``offering_id`` narrows it to that one offering.
    """
    scopes = sorted(set(scopes or DEFAULT_SCOPES))
    unknown = [s for s in scopes if s not in SCOPES]
    if unknown:
        raise Invalid(f"unknown scopes {unknown}; expected some of {list(SCOPES)}", field="scopes")
    access = access_for(session, user)
    if offering_id is not None and access.role_in(offering_id) is None:
        raise Invalid(f"you are not a member of offering {offering_id}", field="offering")
    if "instructor" in scopes and not (
        access.can(offering_id, Action.VIEW_UNRELEASED) if offering_id is not None else access.any_staff
    ):
        raise Invalid("only instructors and TAs may hold the 'instructor' scope", field="scopes")
    staff_only = [s for s in scopes if s in STAFF_SCOPES and s != "instructor"]
    if staff_only and not (access.any_staff or user.is_admin):
        raise Invalid(f"only instructors and TAs may hold the {staff_only[0]!r} scope", field="scopes")
    plain = generate_token()
    token = ApiToken(
        user_id=user.id,
        name=name[:100] or "token",
        prefix=plain[:12],
        token_hash=hash_token(plain),
        scopes=scopes,
        expires_at=expires_at,
        offering_id=offering_id,
    )
    session.add(token)
    session.flush()
    return token, plain


def ensure_first_accounts(session: Session) -> list[tuple[str, str, str]]:
    """On a fresh database, create one instructor and one student with random passwords (printed once by serve)."""
    if session.scalar(select(User.id).limit(1)) is not None:
        return []
    created = []
    for email, role in (("instructor@example.com", Role.INSTRUCTOR), ("student@example.com", Role.STUDENT)):
        user, password = create_user(session, email=email, role=role, display_name=role.value.title())
        created.append((user.email, str(role), password))
    # The demo: the shipped sets are assigned in this offering when serve loads them.
    return created
