"""Users and tokens: authenticate by password, cookie or token, revoke (making them: app.courses.accounts)."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.orm import Session, joinedload

from app.db import utcnow
from app.errors import N_, Invalid, NotFound
from app.security import (
    hash_password,
    hash_token,
    password_needs_rehash,
    verify_password,
)
from app.users import login_sessions
from app.users.models import LOCALES, ApiToken, User

LAST_USED_RESOLUTION = timedelta(minutes=1)
SCOPES = ("submit", "read", "instructor", "metrics")
# Scopes only staff may hold: instructor powers, and the service's metrics (volumes, routes, queue).
STAFF_SCOPES = ("instructor", "metrics")
DEFAULT_SCOPES = ["submit", "read"]
MIN_PASSWORD = 8
MAX_PASSWORD = 1024  # as the login body allows (LoginRequest)


def check_password(password: str, *, field: str = "password") -> None:
    """The strength rule for every new password (accounts created by the CLI or the API, and changed ones)."""
    if len(password) < MIN_PASSWORD:
        raise Invalid(N_("passwords need at least %(num)s characters"), field=field, params={"num": MIN_PASSWORD})
    if len(password) > MAX_PASSWORD:
        raise Invalid(N_("passwords have at most %(num)s characters"), field=field, params={"num": MAX_PASSWORD})


@dataclass(frozen=True)
class PasswordCheck:
    """What a login's password check found, with no database in hand (app.users.password_checks runs it at the
    login's turn): whether it passed, and the password hashed anew where the stored hash is older."""

    ok: bool
    new_hash: str | None = None


def find_for_login(session: Session, *, email: str) -> User | None:
    """The account a login names (None: none), read in a short transaction of its own."""
    user = session.scalar(select(User).where(User.email == email.strip().lower()))
    # The read is done: its connection goes back to the pool while argon2 runs (~30 ms of CPU, far more on a busy
    # machine or for an older, dearer hash), so a class logging in at once does not hold every pooled connection
    # (a pool timeout for the rest).
    session.commit()
    return user


def check_login_password(user: User | None, password: str) -> PasswordCheck:
    """argon2 only, no database: against a dummy hash when there is no such account (timing does not tell which
    emails exist); a hash made with older parameters is re-hashed here too, at the same turn."""
    stored = user.password_hash if user is not None else None
    if not verify_password(password, stored) or user is None or not user.is_active or stored is None:
        return PasswordCheck(ok=False)  # a failed login changes nothing, not even an old hash
    return PasswordCheck(ok=True, new_hash=hash_password(password) if password_needs_rehash(stored) else None)


def finish_login(
    session: Session,
    cookie: MutableMapping[str, Any],
    user: User | None,
    checked: PasswordCheck,
    *,
    password: str,
    lifetime_s: int,
) -> User | None:
    """After a check that passed: store the re-hash, if any, and start a fresh session for the user."""
    if not checked.ok or user is None:
        return None
    if checked.new_hash is not None:
        user = _rehash(session, user, password, checked.new_hash)
    if user is not None:
        start_session(session, cookie, user, lifetime_s=lifetime_s)
    return user


def _rehash(session: Session, user: User, password: str, new_hash: str | None = None) -> User | None:
    """Store the password again at today's parameters (app.security; ``new_hash``, made at the login's turn), in
    the login's own transaction: the request commits it before it answers, so the cookie, derived from the new hash,
    never outlives a hash not stored.

    Only over the hash that was checked: a password changed (or a concurrent login's re-hash stored) since the read
    is not overwritten, or a login with an old password could bring it back. Then the password is checked once more
    against what is stored now.
    """
    checked = user.password_hash
    stored = session.execute(
        update(User)
        .where(User.id == user.id, User.password_hash == checked)
        .values(password_hash=new_hash or hash_password(password))
        .execution_options(synchronize_session="fetch")
    )
    if stored.rowcount == 1:  # type: ignore[attr-defined]
        return user
    session.refresh(user)
    return user if user.is_active and verify_password(password, user.password_hash) else None


def start_session(session: Session, cookie: MutableMapping[str, Any], user: User, *, lifetime_s: int) -> None:
    """A fresh session for a user whose identity was just proven (a password, an LTI launch): a new row, its key in
    the cookie. Nothing set before carries over (session fixation); it ends at logout or a password change."""
    login_sessions.start(session, cookie, user, lifetime_s=lifetime_s)


def log_out(session: Session, cookie: MutableMapping[str, Any]) -> None:
    """End this cookie's session on the server too: a copy of the cookie no longer logs anyone in."""
    login_sessions.end(session, cookie)


def cookie_user(session: Session, cookie: Mapping[str, Any], *, touch: bool = False) -> User | None:
    """The active user a cookie's live session belongs to, or None (logged out, expired, or the password changed
    since). ``touch``: record the use through ``session`` (the caller commits, or gives it up)."""
    row = login_sessions.find(session, cookie)
    if row is None:
        return None
    now = utcnow()
    if touch and login_sessions.touch_due(row, now):
        login_sessions.touch(row, now)
    return row.user


@dataclass(frozen=True)
class PasswordChanged:
    sessions_ended: int  # the account's other sessions, logged out
    tokens_revoked: int  # its API tokens that worked until now


def change_password(
    session: Session,
    cookie: Mapping[str, Any],
    *,
    user: User,
    current: str,
    new: str,
    revoke_tokens: bool = True,
) -> PasswordChanged:
    """Set a new password once the current one is given. Every other session of the account ends (this one goes
    on) and, unless ``revoke_tokens`` is False, so do its API tokens: whoever knew the old password may have made
    some."""
    if not verify_password(current, user.password_hash):
        raise Invalid(N_("the current password is wrong"), field="current_password")
    check_password(new, field="new_password")
    if verify_password(new, user.password_hash):
        raise Invalid(N_("the new password is the current one"), field="new_password")

    user.password_hash = hash_password(new)
    ended = login_sessions.end_others(session, user, cookie)
    return PasswordChanged(
        sessions_ended=ended, tokens_revoked=revoke_all_tokens(session, user) if revoke_tokens else 0
    )


def revoke_all_tokens(session: Session, user: User) -> int:
    """Revoke every API token of ``user`` that still works; returns how many."""
    now = utcnow()
    result = session.execute(
        update(ApiToken)
        .where(
            ApiToken.user_id == user.id,
            ApiToken.revoked_at.is_(None),
            or_(ApiToken.expires_at.is_(None), ApiToken.expires_at > now),
        )
        .values(revoked_at=now)
    )
    return int(getattr(result, "rowcount", 0) or 0)


def set_locale(session: Session, *, user_id: int, locale: str | None) -> User:
    """Store the account's interface language (one of LOCALES), or None: follow the browser."""
    if locale is not None and locale not in LOCALES:
        raise Invalid(
            f"unknown language {locale[:20]!r}: choose one of {', '.join(LOCALES)}, or null to follow the browser",
            field="locale",
        )
    user = get_user(session, user_id)  # a page's own user comes from the identity map, not a second query
    user.locale = locale
    return user


def user_for_token(session: Session, plain: str) -> tuple[User, ApiToken] | None:
    # The user in the same query: every API request authenticates, so this is one round trip, not two.
    token = session.scalar(
        select(ApiToken).where(ApiToken.token_hash == hash_token(plain)).options(joinedload(ApiToken.user))
    )
    now = utcnow()
    if token is None or token.revoked_at is not None or (token.expires_at and token.expires_at <= now):
        return None
    if not token.user.is_active:
        return None
    # To the minute: writing it on every request made each read a write transaction (on SQLite, a wait for the
    # one writer) for a value shown as "last used".
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        token.last_used_at = now
    return token.user, token


def list_tokens(session: Session, *, user: User) -> list[ApiToken]:
    return list(session.scalars(select(ApiToken).where(ApiToken.user_id == user.id).order_by(ApiToken.id)))


def revoke_token(session: Session, *, user: User, token_id: int, own_only: bool = False) -> ApiToken:
    """Revoke a token of ``user`` (admins: anyone's, unless ``own_only``); anyone else's is a 404."""
    token = session.get(ApiToken, token_id)
    if token is None or (token.user_id != user.id and (own_only or not user.is_admin)):
        raise NotFound(f"no token {token_id}", field="token_id")
    token.revoked_at = token.revoked_at or utcnow()
    return token


def get_user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"no user {user_id}", field="user")
    return user
