"""The limits themselves: submissions per user and per token, login attempts per account and per address.

Every attempt counts, including the one that is refused, so a client hammering the API stays refused until it
slows down; a refused request is refused before anything is stored or any password is checked.
"""

from __future__ import annotations

import hashlib
import logging
import math
from dataclasses import dataclass

import redis
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.ratelimit.counters import Counter, DatabaseCounter, RedisCounter
from app.ratelimit.errors import RateLimited

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Limit:
    name: str
    allowed: int
    window_s: int


class Limiter:
    def __init__(self, settings: Settings, counter: Counter, fallback: Counter | None = None) -> None:
        self.settings, self.counter, self.fallback = settings, counter, fallback
        s = settings
        self.submit_user = Limit("submissions-per-user", s.rate_submissions_per_user, s.rate_submission_window_s)
        self.submit_token = Limit("submissions-per-token", s.rate_submissions_per_token, s.rate_submission_window_s)
        self.login_account = Limit("logins-per-account", s.rate_logins_per_account, s.rate_login_window_s)
        self.login_address = Limit("logins-per-address", s.rate_logins_per_address, s.rate_login_window_s)
        self.unauthenticated_address = Limit(
            "unauthenticated-per-address", s.rate_unauthenticated_per_address, s.rate_unauthenticated_window_s
        )

    def submission(self, *, user_id: int, token_id: int | None) -> None:
        """Raise RateLimited when this user (or this token) has submitted too often in the current window."""
        # The token first: when both are exceeded, the error names the limit of the client that was calling.
        checks = [(self.submit_token, str(token_id))] if token_id is not None else []
        self._check([*checks, (self.submit_user, str(user_id))])

    def login(self, *, email: str, address: str) -> None:
        """Raise RateLimited when this account or this client address has tried to log in too often."""
        # The bucket names the account by a hash: the counters (in Redis or a table) never hold an email address.
        account = hashlib.sha256(email.strip().lower().encode()).hexdigest()[:32]
        self._check([(self.login_account, account), (self.login_address, address[:64])])

    def unauthenticated(self, *, address: str) -> None:
        """Raise RateLimited when this client address has called the endpoints anyone may call (an invitation link,
        LTI login initiation and launch) too often: each of those writes or looks up rows before knowing who it is."""
        self._check([(self.unauthenticated_address, address[:64])])

    def _check(self, checks: list[tuple[Limit, str]]) -> None:
        if not self.settings.rate_limits:
            return
        refused: RateLimited | None = None
        for limit, subject in checks:  # every counter counts the attempt, so each limit sees the whole traffic
            if limit.allowed <= 0:
                continue
            count, left = self._hit(f"{limit.name}:{subject}", limit.window_s)
            if count > limit.allowed and refused is None:
                retry = max(1, math.ceil(left))
                refused = RateLimited(limit.name, allowed=limit.allowed, window_s=limit.window_s, retry_after_s=retry)
        if refused is not None:
            raise refused

    def _hit(self, bucket: str, window_s: int) -> tuple[int, float]:
        try:
            return self.counter.hit(bucket, window_s)
        except redis.RedisError as exc:
            if self.fallback is None:
                raise
            # Redis is down: the database still counts (across processes), rather than no limit at all.
            log.warning("rate limiter: Redis failed (%s); counting in the database", type(exc).__name__)
            return self.fallback.hit(bucket, window_s)

    def close(self) -> None:
        if isinstance(self.counter, RedisCounter):
            self.counter.close()


def build_limiter(settings: Settings, session_factory: sessionmaker[Session]) -> Limiter:
    """Redis when the broker is Redis (shared by all API processes), else the database (equally shared)."""
    database = DatabaseCounter(session_factory)
    broker = settings.broker_url or ""
    if broker.startswith("redis"):
        return Limiter(settings, RedisCounter(broker), fallback=database)
    return Limiter(settings, database)
