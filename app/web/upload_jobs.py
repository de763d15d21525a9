"""Uploads validated in the background: the upload page answers at once and its progress page follows the gate.

The validation ran in the API process before (in the request's worker thread); it still does, in a thread of its
own, so the request returns while reference solutions and mutants are graded. A job is kept in this process's
memory for an hour after it ends (a restart while validating loses it; nothing was stored then). Only the
instructor who uploaded may see it.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.web.i18n import N_

log = logging.getLogger(__name__)
KEEP_S = 3600.0
MAX_JOBS = 200
LOG_LINES = 8  # the progress part shows the latest lines only


@dataclass
class UploadJob:
    id: str
    owner_id: int
    filename: str
    started: float = field(default_factory=time.monotonic)
    total: int | None = None  # files the gate will grade, once the archive is unpacked
    lines: list[str] = field(default_factory=list)
    finished: float | None = None
    status: int = 200
    result: dict[str, Any] = field(default_factory=dict)  # the instructor page's context once it is done

    @property
    def done(self) -> bool:
        return self.finished is not None

    @property
    def graded(self) -> int:
        return len(self.lines)

    @property
    def recent(self) -> list[str]:
        return self.lines[-LOG_LINES:]


Work = Callable[[UploadJob], tuple[int, dict[str, Any]]]


class UploadJobs:
    def __init__(self) -> None:
        self._jobs: dict[str, UploadJob] = {}
        self._lock = threading.Lock()

    def start(self, *, owner_id: int, filename: str, work: Work) -> UploadJob:
        """Run ``work`` in a thread; it fills the job's progress and returns (status, page context)."""
        job = UploadJob(id=secrets.token_urlsafe(16), owner_id=owner_id, filename=filename)
        with self._lock:
            self._forget_old()
            self._jobs[job.id] = job
        threading.Thread(target=self._run, args=(job, work), name=f"upload-{job.id[:6]}", daemon=True).start()
        return job

    def get(self, job_id: str, *, owner_id: int) -> UploadJob | None:
        with self._lock:
            job = self._jobs.get(job_id)
        return job if job is not None and job.owner_id == owner_id else None

    def _run(self, job: UploadJob, work: Work) -> None:
        try:
            job.status, job.result = work(job)
        except Exception:  # a bug must still end the job, with a message instead of a page that waits forever
            log.exception("upload validation failed")
            job.status, job.result = 500, {"upload_error": N_("Validating this upload failed on our side; try again.")}
        job.finished = time.monotonic()

    def _forget_old(self) -> None:
        now = time.monotonic()
        for key, job in list(self._jobs.items()):
            if job.finished is not None and now - job.finished > KEEP_S:
                del self._jobs[key]
        while len(self._jobs) >= MAX_JOBS:  # the oldest finished first, then the oldest of all
            oldest = min(self._jobs.values(), key=lambda j: (j.finished is None, j.started))
            del self._jobs[oldest.id]
