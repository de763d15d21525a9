"""pylti1p3's launch data storage in our database: OIDC state, nonces and validated launches, each with an expiry.

A nonce is consumed by the check that reads it (one DELETE whose row count says whether it was there), so a
replayed id_token is refused however quickly it comes back. Rows past their expiry are never read and are pruned
by every login.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pylti1p3.launch_data_storage.base import LaunchDataStorage
from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from app.db import session_scope, utcnow
from app.lti.models import LtiLaunchState

DEFAULT_TTL_S = 3600


class DatabaseLaunchStorage(LaunchDataStorage[Any]):
    """Each call is its own short transaction: the launch's state must survive a launch that is refused later."""

    # No session id prefix: the keys (state, nonce, launch id) are unguessable, and the launch arrives as a
    # cross-site POST, where a SameSite=Lax cookie of ours would not come along.
    _session_cookie_name = ""

    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        super().__init__()
        self._factory = session_factory

    def get_session_cookie_name(self) -> str | None:
        return None

    def can_set_keys_expiration(self) -> bool:
        return True

    def get_value(self, key: str) -> Any:
        key = self._prepare_key(key)
        with self._factory() as session:
            row = session.get(LtiLaunchState, key)
            if row is None or row.expires_at <= utcnow():
                return None
            return row.value

    def set_value(self, key: str, value: Any, exp: int | None = None) -> None:
        key = self._prepare_key(key)
        expires = utcnow() + timedelta(seconds=exp or DEFAULT_TTL_S)
        with session_scope(self._factory) as session:
            row = session.get(LtiLaunchState, key)
            if row is None:
                session.add(LtiLaunchState(key=key, value=value, expires_at=expires))
            else:
                row.value, row.expires_at = value, expires

    def check_value(self, key: str) -> bool:
        key = self._prepare_key(key)
        with self._factory() as session:
            found = session.scalar(select(LtiLaunchState.expires_at).where(LtiLaunchState.key == key))
            return found is not None and found > utcnow()

    def consume(self, key: str) -> bool:
        """Delete the key; True if it was there and not expired (only one caller ever gets True)."""
        key = self._prepare_key(key)
        with session_scope(self._factory) as session:
            result = session.execute(
                delete(LtiLaunchState).where(LtiLaunchState.key == key, LtiLaunchState.expires_at > utcnow())
            )
            return bool(getattr(result, "rowcount", 0) == 1)

    def prune(self) -> None:
        with session_scope(self._factory) as session:
            session.execute(delete(LtiLaunchState).where(LtiLaunchState.expires_at <= utcnow()))
