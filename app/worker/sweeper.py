"""Takes over, every few seconds, the jobs held by worker processes of this host that died (a kill -9, the OOM
killer), for the embedded pool and Celery workers alike, so their submissions are graded again within seconds and
not after the lease. A job held by a worker of another host is taken over when its lease runs out (its heartbeat
stopped renewing it): a process can only tell that a process of its own host is gone.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from app.db import session_scope
from app.worker.claims import requeue_orphans

log = logging.getLogger(__name__)
ORPHANS_EVERY_S = 2.0


class OrphanSweeper:
    """A thread that requeues the jobs of dead local workers and hands their ids to ``requeued``."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        max_attempts: int,
        requeued: Callable[[list[int]], None],
        *,
        every_s: float = ORPHANS_EVERY_S,
    ) -> None:
        self._session_factory, self._max_attempts, self._requeued = session_factory, max_attempts, requeued
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="orphan-sweeper", daemon=True)
        self._failing = False

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def sweep_once(self) -> list[int]:
        with session_scope(self._session_factory) as session:
            ids = requeue_orphans(session, self._max_attempts)
        if ids:
            log.warning("took over %d submission(s) of a worker that died: %s", len(ids), ids)
            self._requeued(ids)
        return ids

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.sweep_once()
                if self._failing:
                    log.info("orphan sweeper working again")
                    self._failing = False
            except Exception as exc:  # one line per outage (database or broker), not one per pass
                if not self._failing:
                    log.warning("orphan sweeper failed (%s: %s); retrying every %s s", type(exc).__name__, exc,
                                self.every_s)  # fmt: skip
                    self._failing = True
