"""Invitations: a one-time link that activates one roster row of one offering.

For an email without an account the link sets a password and creates the account; for one with an account, that
account (logged in) accepts the offering with it. Either way the link activates its own membership and no other:
a link the instructor was handed to pass on (no SMTP, or the mail failed) proves only that the instructor chose
whom to give it, not who owns the address, so another offering's pending row for the same email stays pending.
Only a link the server mailed itself (``mailed_at``) proves the address, and then the new account also takes over
the rows other offerings loaded for it before it existed.

The link carries 256 random bits; only their SHA-256 is stored (like API tokens), so a database dump opens no
account. A link works once, until it expires; it never resets the password of an account.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from app import mail
from app.config import Settings
from app.courses import service as courses
from app.courses.accounts import create_user
from app.courses.models import Membership, MemberStatus
from app.db import utcnow
from app.errors import N_, Conflict, DomainError, Forbidden, Invalid
from app.security import hash_token
from app.users.models import Invitation, Role, User

LINK_PATH = "/invite/"
HAS_ACCOUNT = N_("%(email)s is not waiting for an invitation (a member already, or dropped)")
NOT_YOURS = N_("this invitation is for %(email)s; log in as that account to accept it")


class InvitationInvalid(DomainError):
    """A link that is unknown (forged or replaced), used, expired, or whose email has an account by now."""

    status_code = 410
    type = "invitation_invalid"


@dataclass(frozen=True)
class Issued:
    invitation: Invitation
    token: str  # the plain token: shown or mailed once, never stored

    def link(self, base_url: str) -> str:
        return base_url.rstrip("/") + LINK_PATH + self.token


def issue(session: Session, member: Membership, *, valid_for: timedelta) -> Issued:
    """A new link for a member who has not accepted the offering yet; any earlier link of theirs stops working."""
    if member.user_id is not None or member.status != MemberStatus.INVITED:
        raise Conflict(HAS_ACCOUNT, field="member", params={"email": member.email})
    session.execute(delete(Invitation).where(Invitation.membership_id == member.id))
    token = secrets.token_urlsafe(32)
    invitation = Invitation(membership_id=member.id, token_hash=hash_token(token), expires_at=utcnow() + valid_for)
    session.add(invitation)
    session.flush()
    return Issued(invitation, token)


def account_of(session: Session, member: Membership) -> User | None:
    """The account of the member's email, if one exists (then the link is accepted by logging in as it)."""
    return session.scalar(select(User).where(User.email == member.email))


def pending(session: Session, token: str, *, lock: bool = False) -> tuple[Invitation, Membership]:
    """The invitation a link's token opens, with its membership; InvitationInvalid says why not."""
    query = select(Invitation).where(Invitation.token_hash == hash_token(token))
    # Locked when it is used: two tabs posting the same link at once get one account and one refusal.
    invitation = session.scalar(query.with_for_update() if lock else query)
    if invitation is None:
        raise InvitationInvalid(N_("this invitation link is not valid (a newer one may have replaced it)"))
    if invitation.used_at is not None:
        raise InvitationInvalid(N_("this invitation link was used already; log in with the password set then"))
    if invitation.expires_at <= utcnow():
        raise InvitationInvalid(N_("this invitation link has expired; ask your instructor for a new one"))
    member = session.get(Membership, invitation.membership_id)
    assert member is not None  # the foreign key cascades
    if member.status == MemberStatus.DROPPED:
        raise InvitationInvalid(N_("this invitation was withdrawn; ask your instructor"))
    if member.user_id is not None:  # accepted meanwhile (another link, an admin, a proven account's claim)
        raise InvitationInvalid(N_("an account for %(email)s exists already; log in with it"),
                                params={"email": member.email})  # fmt: skip
    return invitation, member


def accept(session: Session, token: str, *, password: str, confirm: str, now: datetime | None = None) -> User:
    """Set the password: create the account for the invitation's email and activate the invitation's membership
    (one transaction; the caller commits). Only a link the server mailed also hands the account the other
    offerings' pending rows of the email. The link is used up."""
    invitation, member = pending(session, token, lock=True)
    if account_of(session, member) is not None:
        raise InvitationInvalid(N_("an account for %(email)s exists already; log in with it"),
                                params={"email": member.email})  # fmt: skip
    if password != confirm:
        raise Invalid(N_("the two passwords differ"), field="password")
    if len(password) < 8:
        raise Invalid(N_("passwords need at least %(num)s characters"), field="password", params={"num": 8})
    proven = invitation.mailed_at is not None
    user, _ = create_user(
        session, email=member.email, role=Role.STUDENT, password=password, display_name=member.name,
        enroll_default=False, email_proven=proven,
    )  # fmt: skip
    _activate(session, invitation, member, user, now=now)
    return user


def accept_as(session: Session, token: str, *, user: User, now: datetime | None = None) -> Membership:
    """The logged-in account of the invitation's email accepts the offering: that one membership turns active (the
    caller commits). Anyone else's session is refused: the link is for the person the instructor invited."""
    invitation, member = pending(session, token, lock=True)
    if user.email != member.email:
        raise Forbidden(NOT_YOURS, params={"email": member.email})
    if invitation.mailed_at is not None:
        courses.claim_pending(session, user)  # a mailed link proves the address, as at account creation
    _activate(session, invitation, member, user, now=now)
    return member


def _activate(
    session: Session, invitation: Invitation, member: Membership, user: User, *, now: datetime | None
) -> None:
    member.user_id, member.status = user.id, MemberStatus.ACTIVE
    invitation.used_at = now or utcnow()
    session.flush()


@dataclass(frozen=True)
class Delivery:
    email: str
    expires_at: datetime
    mailed: bool
    link: str | None  # for the instructor to pass on: set when it was not mailed
    mail_error: str | None = None


def invite(session: Session, settings: Settings, member: Membership, *, base_url: str, title: str) -> Delivery:
    """Issue a link (committed) and mail it when SMTP is configured; otherwise, or when mailing fails, hand it back
    to show."""
    issued = issue(session, member, valid_for=timedelta(days=settings.invitation_valid_days))
    link, expires = issued.link(base_url), issued.invitation.expires_at
    # Committed before the mail goes out: a link in someone's inbox must exist.
    session.commit()
    if not mail.configured(settings):
        return Delivery(member.email, expires, mailed=False, link=link)
    if account_of(session, member) is None:
        body = (
            f"You are on the roster of {title}.\n\n"
            f"Set your password here (the link works once, until {expires:%Y-%m-%d %H:%M} UTC):\n{link}\n\n"
            "Then log in with this email address. If you did not expect this, ignore it.\n"
        )
    else:
        body = (
            f"You are on the roster of {title}.\n\n"
            f"Log in with this email address, then open this link to join (it works once, until "
            f"{expires:%Y-%m-%d %H:%M} UTC):\n{link}\n\nIf you did not expect this, ignore it.\n"
        )
    try:
        mail.send(settings, to=member.email, subject=f"Your account for {title}", body=body)
    except mail.MailFailed as exc:
        return Delivery(member.email, expires, mailed=False, link=link, mail_error=str(exc))
    # Marked only once the mail is out, and only this link (a newer one replaces it unmarked): a mailed link is
    # the one proof of the address there is. An UPDATE, not the object: a link replaced meanwhile updates nothing.
    session.execute(update(Invitation).where(Invitation.id == issued.invitation.id).values(mailed_at=utcnow()))
    session.commit()
    return Delivery(member.email, expires, mailed=True, link=None)
