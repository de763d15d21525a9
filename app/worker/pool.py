"""The embedded worker pool: threads in the API process (or in `autograder worker`) that claim and grade jobs."""

from __future__ import annotations

import logging
import threading

from app.db import database_unavailable, exc_text, session_scope
from app.worker.claims import claim_next, requeue_orphans, worker_id
from app.worker.grading import GradingJob
from app.worker.sweeper import OrphanSweeper

log = logging.getLogger(__name__)


class EmbeddedPool:
    def __init__(self, job: GradingJob, size: int, *, poll_s: float = 1.0) -> None:
        self.job = job
        self.size = size
        self.poll_s = poll_s
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        # Another process of this host (a second `autograder worker`) that dies mid-grading: its job is back here.
        attempts = job.settings.max_grading_attempts
        self._orphans = OrphanSweeper(job.session_factory, attempts, lambda _ids: self.notify())

    def start(self) -> None:
        with session_scope(self.job.session_factory) as session:
            requeued = requeue_orphans(session, self.job.settings.max_grading_attempts)
        if requeued:
            log.warning("requeued %d submission(s) interrupted by a previous crash", len(requeued))
        for slot in range(self.size):
            thread = threading.Thread(target=self._loop, args=(slot,), name=f"grader-{slot}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._orphans.start()

    def notify(self) -> None:
        """A new job was queued: wake the idle workers now rather than at their next poll."""
        self._wake.set()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        self._wake.set()
        self._orphans.stop()
        for thread in self._threads:
            thread.join(timeout)

    def _loop(self, slot: int) -> None:
        worker = worker_id(slot)
        unavailable = False  # the database is down: one line when it goes, one when it is back
        while not self._stop.is_set():
            try:
                with session_scope(self.job.session_factory) as session:
                    settings = self.job.settings
                    job_id = claim_next(
                        session,
                        worker=worker,
                        lease_s=settings.job_lease_s,
                        max_attempts=settings.max_grading_attempts,
                    )
                if unavailable:
                    log.info("worker %s: the database answers again", worker)
                    unavailable = False
                if job_id is not None:
                    self.job.run(job_id, worker)
                    continue
            except Exception as exc:  # keep the worker alive; the job's lease makes it claimable again
                if not database_unavailable(exc):
                    log.exception("worker %s failed", worker)
                elif not unavailable:
                    log.warning("worker %s: database unavailable (%s); polling it", worker, exc_text(exc))
                    unavailable = True
            self._wake.wait(self.poll_s)
            self._wake.clear()
