"""The polling shell the queued senders (webhooks, LTI grade passback) share: a daemon thread that claims the due
rows of one queue table and attempts each, and sleeps the poll interval only when a round found nothing to do.

A row is claimed with a conditional UPDATE that moves its next attempt CLAIM_S ahead, so several senders (one in
every process that grades) never attempt one row twice, and a row whose sender died is taken up again later.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import ClassVar, Protocol

from sqlalchemy import select, update
from sqlalchemy.orm import Mapped, Session, sessionmaker

from app.config import Settings
from app.db import session_scope, utcnow
from app.retrying import OutageLog

CLAIM_S = 120  # a claimed attempt is not retried by another sender before this (timeout + margin)


class QueuedRow(Protocol):
    """A queue table's ORM class: a row waits while its status is "pending" and is due once next_attempt_at has
    passed. (ClassVar: the sender reads the columns on the class, for its queries.)"""

    id: ClassVar[Mapped[int]]
    status: ClassVar[Mapped[str]]
    next_attempt_at: ClassVar[Mapped[datetime | None]]


class PollingSender:
    """Runs ``run_once`` in a loop on its own thread; a subclass names its queue table and makes one attempt."""

    queue: ClassVar[type[QueuedRow]]

    def __init__(
        self, settings: Settings, session_factory: sessionmaker[Session], *,
        log: logging.Logger, name: str, thread_name: str, join_s: float,
    ) -> None:  # fmt: skip
        self.settings, self.session_factory = settings, session_factory
        self._stop = threading.Event()
        self.outage = OutageLog(log, name)  # the database down: one line when it goes, one when back
        self._thread: threading.Thread | None = None
        self._thread_name, self._join_s = thread_name, join_s

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=self._thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self._join_s)

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not self.poll():  # a busy queue is drained without waiting between rounds (both use this interval)
                self._stop.wait(self.settings.webhook_poll_s)

    def poll(self) -> int:
        """One round of the loop: ``run_once``; a failure is logged (a database outage once) and counts as 0."""
        return self.outage.run(self.run_once)

    def run_once(self, limit: int = 20) -> int:
        """Attempt the due rows this sender can claim; returns how many attempts it made."""
        queue = self.queue
        with self.session_factory() as session:
            due = list(
                session.scalars(
                    select(queue.id)
                    .where(queue.status == "pending", queue.next_attempt_at <= utcnow())
                    .order_by(queue.next_attempt_at)
                    .limit(limit)
                )
            )
        made = 0
        for row_id in due:
            if self._claim(row_id):
                self._attempt(row_id)
                made += 1
        return made

    def _claim(self, row_id: int) -> bool:
        queue, now = self.queue, utcnow()
        with session_scope(self.session_factory) as session:
            result = session.execute(
                update(queue)
                .where(queue.id == row_id, queue.status == "pending", queue.next_attempt_at <= now)
                .values(next_attempt_at=now + timedelta(seconds=CLAIM_S))
            )
            return bool(getattr(result, "rowcount", 0) == 1)

    def _attempt(self, row_id: int) -> None:
        """Make one attempt for a claimed row and record its outcome."""
        raise NotImplementedError
