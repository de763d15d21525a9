"""Uploads validated in the background: the upload page answers at once and its progress page follows the gate.

The validation ran in the API process before (in the request's worker thread); it still does, in a thread of its
own (app.web.background_jobs), so the request returns while reference solutions and mutants are graded. A job is
kept in this process's memory for an hour after it ends (a restart while validating loses it; nothing was stored
then). Only the instructor who uploaded may see it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.web.background_jobs import BackgroundJobs, Job
from app.web.i18n import N_

LOG_LINES = 8  # the progress part shows the latest lines only


@dataclass(kw_only=True)
class UploadJob(Job):
    filename: str
    total: int | None = None  # files the gate will grade, once the archive is unpacked
    lines: list[str] = field(default_factory=list)

    @property
    def graded(self) -> int:
        return len(self.lines)

    @property
    def recent(self) -> list[str]:
        return self.lines[-LOG_LINES:]


def upload_jobs() -> BackgroundJobs[UploadJob]:
    return BackgroundJobs(
        name="upload", failure={"upload_error": N_("Validating this upload failed on our side; try again.")}
    )
