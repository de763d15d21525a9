"""Invitations: a one-time link that lets an invited roster member (no account yet) set a password.

The link carries 256 random bits; only their SHA-256 is stored (like API tokens), so a database dump opens no
account. A link works once, until it expires, and only while no account exists for its email: it creates an
account, it never resets the password of one.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app import mail
from app.config import Settings
from app.courses.models import Membership, MemberStatus
from app.db import utcnow
from app.errors import N_, Conflict, DomainError, Invalid
from app.security import hash_token
from app.users.models import Invitation, Role, User
from app.users.service import create_user

LINK_PATH = "/invite/"
HAS_ACCOUNT = N_("%(email)s has an account already; they log in with it")


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
    """A new link for an invited member; any earlier link of theirs stops working."""
    if member.user_id is not None or member.status != MemberStatus.INVITED:
        raise Conflict(HAS_ACCOUNT, field="member", params={"email": member.email})
    if session.scalar(select(User.id).where(User.email == member.email)) is not None:
        raise Conflict(HAS_ACCOUNT, field="member", params={"email": member.email})
    session.execute(delete(Invitation).where(Invitation.membership_id == member.id))
    token = secrets.token_urlsafe(32)
    invitation = Invitation(membership_id=member.id, token_hash=hash_token(token), expires_at=utcnow() + valid_for)
    session.add(invitation)
    session.flush()
    return Issued(invitation, token)


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
    if member.user_id is not None or session.scalar(select(User.id).where(User.email == member.email)):
        raise InvitationInvalid(N_("an account for %(email)s exists already; log in with it"),
                                params={"email": member.email})  # fmt: skip
    return invitation, member


def accept(session: Session, token: str, *, password: str, confirm: str, now: datetime | None = None) -> User:
    """Set the password: create the account for the invitation's email and activate its memberships (one
    transaction; the caller commits). The link is used up."""
    invitation, member = pending(session, token, lock=True)
    if password != confirm:
        raise Invalid(N_("the two passwords differ"), field="password")
    if len(password) < 8:
        raise Invalid(N_("passwords need at least %(num)s characters"), field="password", params={"num": 8})
    user, _ = create_user(

        session, email=member.email, role=Role.STUDENT, password=password, display_name=member.name,
        enroll_default=False,
    )  # fmt: skip
    invitation.used_at = now or utcnow()
    session.flush()
    return user


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
    body = (
        f"You are on the roster of {title}.\n\n"
        f"Set your password here (the link works once, until {expires:%Y-%m-%d %H:%M} UTC):\n{link}\n\n"
        "Then log in with this email address. If you did not expect this, ignore it.\n"
    )
    try:
        mail.send(settings, to=member.email, subject=f"Your account for {title}", body=body)
    except mail.MailFailed as exc:
        return Delivery(member.email, expires, mailed=False, link=link, mail_error=str(exc))
    return Delivery(member.email, expires, mailed=True, link=None)
