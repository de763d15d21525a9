"""Long jobs a page starts in a thread of the API process (an upload's validation gate, a trial run of a regrade):
the POST answers at once and a progress page follows the job, which fills in its own progress as it goes.

A job is kept in this process's memory for an hour after it ends (a restart loses it, and one still running with
it). Only the user who started it may see it. Each kind of job has its own registry (app.state.upload_jobs,
app.state.trial_jobs), so one kind cannot push the other's jobs out.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

log = logging.getLogger(__name__)
KEEP_S = 3600.0
MAX_JOBS = 200


@dataclass(kw_only=True)
class Job:
    id: str = field(default_factory=lambda: secrets.token_urlsafe(16))
    owner_id: int
    started: float = field(default_factory=time.monotonic)
    finished: float | None = None
    status: int = 200
    result: dict[str, Any] = field(default_factory=dict)  # the page's context once it is done

    @property
    def done(self) -> bool:
        return self.finished is not None


J = TypeVar("J", bound=Job)


class BackgroundJobs(Generic[J]):
    """The jobs of one kind. ``failure``: the result a job ends with when its work raised (a bug of ours), so
    its page says so instead of waiting forever."""

    def __init__(self, *, name: str, failure: dict[str, Any]) -> None:
        self.name = name
        self.failure = failure
        self._jobs: dict[str, J] = {}
        self._lock = threading.Lock()

    def start(self, job: J, work: Callable[[J], tuple[int, dict[str, Any]]], *, alone: bool = False) -> bool:
        """Run ``work`` in a thread; it fills the job's progress and returns (status, page context). With
        ``alone``, only if its owner has no job of this kind running (checked under the lock: two requests at once
        cannot both start one); False when nothing was started."""
        with self._lock:
            if alone and any(j.owner_id == job.owner_id and not j.done for j in self._jobs.values()):
                return False
            self._forget_old()
            self._jobs[job.id] = job
        threading.Thread(target=self._run, args=(job, work), name=f"{self.name}-{job.id[:6]}", daemon=True).start()
        return True

    def get(self, job_id: str, *, owner_id: int) -> J | None:
        """The job, only for the user who started it (None for anyone else, as for an unknown id)."""
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.owner_id == owner_id else None

    def running(self, *, owner_id: int) -> list[J]:
        with self._lock:
            return [j for j in self._jobs.values() if j.owner_id == owner_id and not j.done]

    def _run(self, job: J, work: Callable[[J], tuple[int, dict[str, Any]]]) -> None:
        try:
            job.status, job.result = work(job)
        except Exception:
            log.exception("background %s job failed", self.name)
            job.status, job.result = 500, dict(self.failure)
        job.finished = time.monotonic()

    def _forget_old(self) -> None:
        now = time.monotonic()
        for key, job in list(self._jobs.items()):
            if job.finished is not None and now - job.finished > KEEP_S:
                del self._jobs[key]
        while len(self._jobs) >= MAX_JOBS:  # the oldest finished first, then the oldest of all
            oldest = min(self._jobs.values(), key=lambda j: (j.finished is None, j.started))
            del self._jobs[oldest.id]
