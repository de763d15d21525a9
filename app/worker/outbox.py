"""Dispatch to the broker that survives a broker outage: the queued rows are the outbox.

A submission is stored before it is sent, so the database already says what must reach a worker: every claimable
QUEUED row. While the broker answers, a new submission is sent at once. When a send fails, or a probe finds the
broker gone, the outbox marks it down (one log line), keeps the ids of what it could not send and stops trying per
request, so a post answers 202 at once. A thread probes the broker every few seconds; when it answers again, the
outbox re-sends every claimable QUEUED row of the database (not only its own: the broker may have restarted empty,
and another API process may have stored some), logs one line with the outage's length and count, and is up again.
A row sent twice is harmless: a worker claims it with a conditional UPDATE, the second delivery finds nothing.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kombu import Connection
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.db import utcnow
from app.submissions.models import Status, Submission
from app.worker.claims import claimable

log = logging.getLogger(__name__)
PROBE_EVERY_S = 2.0
PROBE_TIMEOUT_S = 2.0


def queued_now(session_factory: sessionmaker[Session]) -> list[int]:
    """Every QUEUED row a worker could claim now: what the broker must hold after an outage."""
    with session_factory() as session:
        query = select(Submission.id).where(Submission.status == Status.QUEUED, claimable(utcnow()))
        return list(session.scalars(query.order_by(Submission.id)))


def broker_answers(url: str) -> None:
    """Raise if the broker does not accept a connection within PROBE_TIMEOUT_S."""
    with Connection(url, connect_timeout=PROBE_TIMEOUT_S) as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=PROBE_TIMEOUT_S)


class BrokerOutbox:
    """``dispatch(id)`` for the API: sends now when the broker is up, else leaves the row for the next sweep."""

    def __init__(
        self,
        send: Callable[[int], None],
        session_factory: sessionmaker[Session],
        probe: Callable[[], None],
        *,
        probe_every_s: float = PROBE_EVERY_S,
    ) -> None:
        self._send, self._session_factory, self._probe = send, session_factory, probe
        self.probe_every_s = probe_every_s
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self._unsent = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def broker_up(self) -> bool:
        return self._down_since is None

    def dispatch(self, submission_id: int) -> None:
        """Never raises: the row is stored and queued, and a sweep sends it if this cannot."""
        if self._down_since is None:
            try:
                self._send(submission_id)
                return
            except Exception as exc:
                self._mark_down(exc)
        with self._lock:
            self._unsent += 1

    def start(self) -> None:
        # The first pass sweeps at once: a previous process may have stored rows while the broker was down.
        self._thread = threading.Thread(target=self._run, name="broker-outbox", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def sweep_once(self) -> int | None:
        """Probe; if the broker answers after being down (or on the first pass), re-send the queued rows."""
        try:
            self._probe()
        except Exception as exc:
            self._mark_down(exc)
            return None
        return self._flush()

    def _run(self) -> None:
        first = True
        while first or not self._stop.wait(self.probe_every_s):
            try:
                if first or not self.broker_up:
                    self.sweep_once()
                else:
                    self._probe()  # a broker that went away between requests is noticed before the next one
            except Exception as exc:
                self._mark_down(exc)
            first = False

    def _mark_down(self, exc: Exception) -> None:
        with self._lock:
            if self._down_since is not None:
                return
            self._down_since = time.monotonic()
        log.error("broker unreachable (%s: %s); submissions are stored and will be sent when it is back",
                  type(exc).__name__, exc)  # fmt: skip

    def _flush(self) -> int:
        # Up before the query: a row committed after it is sent by its own request, one committed before is in it.
        with self._lock:
            down_since, unsent = self._down_since, self._unsent
            self._down_since, self._unsent = None, 0
        try:
            ids = queued_now(self._session_factory)
            for submission_id in ids:
                self._send(submission_id)
        except Exception:
            with self._lock:  # still the same outage: no second log line, and the next pass sends everything
                if down_since is not None and self._down_since is None:
                    self._down_since, self._unsent = down_since, self._unsent + unsent
            raise
        if down_since is not None:
            log.warning("broker is back after %.1f s: re-sent %d queued submission(s) (%d stored meanwhile)",
                        time.monotonic() - down_since, len(ids), unsent)  # fmt: skip
        elif ids:
            log.info("sent %d queued submission(s) left by a previous run", len(ids))
        return len(ids)
