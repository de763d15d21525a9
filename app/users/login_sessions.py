"""Server-side login sessions: the signed cookie carries a random key, the ``login_session`` row decides.

A signed cookie alone cannot be taken back: a copy kept after logout or a password change would go on working
until it expires. Here each request looks its key's row up (one indexed read, the user in the same query), and
logging out or changing the password revokes rows, so every copy of the cookie ends with them.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Mapping, MutableMapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session, contains_eager, sessionmaker

from app.db import utcnow
from app.users.models import LoginSession, User

log = logging.getLogger(__name__)

KEY = "sid"  # the cookie session's entry holding the key
# As a token's last_used_at: moving last_seen_at (and with it the idle expiry) on every request would make every
# read a write transaction; to the minute is enough for a lifetime counted in days.
TOUCH_RESOLUTION = timedelta(minutes=1)


def _hash(key: str) -> str:
    # 256 random bits: a fast hash is enough (nothing to guess), and it lets the row be found by it.
    return hashlib.sha256(key.encode()).hexdigest()


def _key_hash(cookie: Mapping[str, Any]) -> str | None:
    key = cookie.get(KEY)
    return _hash(key) if isinstance(key, str) and 0 < len(key) <= 100 else None


def start(session: Session, cookie: MutableMapping[str, Any], user: User, *, lifetime_s: int) -> LoginSession:
    """A new session for ``user`` (whose identity was just proven): a fresh cookie, nothing from before carries
    over (session fixation); the session the cookie held before, if any, ends."""
    now = utcnow()
    end(session, cookie)
    # The account's sessions that ended (expired, revoked) are kept no longer than its next login.
    session.execute(
        delete(LoginSession).where(
            LoginSession.user_id == user.id,
            or_(LoginSession.expires_at <= now, LoginSession.revoked_at.is_not(None)),
        )
    )
    key = secrets.token_urlsafe(32)
    row = LoginSession(
        key_hash=_hash(key),
        user_id=user.id,
        created_at=now,
        last_seen_at=now,
        expires_at=now + timedelta(seconds=lifetime_s),
    )
    session.add(row)
    session.flush()
    cookie.clear()
    cookie[KEY] = key
    return row


def find(session: Session, cookie: Mapping[str, Any]) -> LoginSession | None:
    """The live session of this cookie, its active user loaded with it (one query), or None: no key, an unknown
    one, or a session that was revoked, has expired, or whose account was deactivated."""
    key_hash = _key_hash(cookie)
    if key_hash is None:
        return None
    # FROM "user" JOIN login_session: the user's row comes with it (and stays in the identity map for the page).
    row = session.scalars(
        select(LoginSession)
        .select_from(User)
        .join(LoginSession, LoginSession.user_id == User.id)
        .where(LoginSession.key_hash == key_hash)
        .options(contains_eager(LoginSession.user))
    ).first()
    if row is None or row.revoked_at is not None or row.expires_at <= utcnow() or not row.user.is_active:
        return None
    return row


def touch_due(row: LoginSession, now: datetime) -> bool:
    return now - row.last_seen_at >= TOUCH_RESOLUTION


def touch(row: LoginSession, now: datetime) -> None:
    """Mark the session used now: its idle expiry moves on by the same lifetime (through the row's session)."""
    row.expires_at = now + (row.expires_at - row.last_seen_at)
    row.last_seen_at = now


def touch_apart(factory: sessionmaker[Session], row: LoginSession) -> None:
    """``touch``, in a short transaction of its own: a page that only reads must not fail (or wait for the one
    SQLite writer at its commit) for this bookkeeping, so a locked database only skips it."""
    now = utcnow()
    if not touch_due(row, now):
        return
    try:
        with factory() as session:
            session.execute(
                update(LoginSession)
                .where(LoginSession.id == row.id)
                .values(last_seen_at=now, expires_at=now + (row.expires_at - row.last_seen_at))
            )
            session.commit()
    except OperationalError as exc:
        log.warning("could not record a session's last use (%s); the request goes on", exc.orig)


def end(session: Session, cookie: MutableMapping[str, Any]) -> None:
    """Log out: revoke this cookie's session (every copy of the cookie ends with it) and empty the cookie."""
    key_hash = _key_hash(cookie)
    if key_hash is not None:
        session.execute(
            update(LoginSession)
            .where(LoginSession.key_hash == key_hash, LoginSession.revoked_at.is_(None))
            .values(revoked_at=utcnow())
        )
    cookie.clear()


def end_others(session: Session, user: User, cookie: Mapping[str, Any]) -> int:
    """Revoke every session of ``user`` but this cookie's (a password change); returns how many ended."""
    keep = _key_hash(cookie) or ""
    result = session.execute(
        update(LoginSession)
        .where(LoginSession.user_id == user.id, LoginSession.revoked_at.is_(None), LoginSession.key_hash != keep)
        .values(revoked_at=utcnow())
    )
    return int(getattr(result, "rowcount", 0) or 0)
