"""Fixed-window counters: ``hit(bucket, window_s)`` counts one event and returns the count in the current window.

Counting and reading are one atomic step in both backends (Redis INCR; one INSERT ... ON CONFLICT DO UPDATE ...
RETURNING in SQLite and PostgreSQL), so several API processes can never both see the last free slot.
"""

from __future__ import annotations

import time
from typing import Protocol

import redis
from sqlalchemy import Table, case
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from app.db import session_scope
from app.ratelimit.models import RateLimitCounter


class Counter(Protocol):
    def hit(self, bucket: str, window_s: int) -> tuple[int, float]:
        """Count one event; return (events in this window so far, seconds until the window ends)."""
        ...


def _window(window_s: int, now: float) -> tuple[int, float]:
    start = int(now // window_s) * window_s
    return start, start + window_s - now


class DatabaseCounter:
    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self.session_factory = session_factory

    def hit(self, bucket: str, window_s: int) -> tuple[int, float]:
        start, left = _window(window_s, time.time())
        table = RateLimitCounter.__table__
        assert isinstance(table, Table)
        with session_scope(self.session_factory) as session:
            dialect = session.get_bind().dialect.name
            insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
            stmt = insert(table).values(bucket=bucket, window_start=start, count=1)
            same_window = table.c.window_start == stmt.excluded.window_start
            upsert = stmt.on_conflict_do_update(
                index_elements=[table.c.bucket],
                set_={
                    # A new window starts the count again: the row never grows past one per subject.
                    "count": case((same_window, table.c.count + 1), else_=1),
                    "window_start": stmt.excluded.window_start,
                },
            ).returning(table.c.count)
            count = int(session.execute(upsert).scalar_one())
        return count, left


class RedisCounter:
    def __init__(self, url: str, prefix: str = "autograder:ratelimit:") -> None:
        self.client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2)
        self.prefix = prefix

    def hit(self, bucket: str, window_s: int) -> tuple[int, float]:
        start, left = _window(window_s, time.time())
        key = f"{self.prefix}{bucket}:{start}"
        pipe = self.client.pipeline()
        pipe.incr(key)
        pipe.expire(key, window_s + 5)  # the key outlives its window a little, then Redis forgets it
        count, _ = pipe.execute()
        return int(count), left

    def close(self) -> None:
        self.client.close()
