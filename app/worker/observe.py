"""What a finished grading job tells the operators: one structured log line, and the grading metrics.

Called by GradingJob once per claimed job. The line names the submission, the problem and its kind, the verdict,
the score and the duration; never the payload (the student's source or answers).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from app.metrics import registry as metrics
from graders.results import GradeResult

log = logging.getLogger("app.grading")
# Whoever grades (the embedded pool, `autograder worker`, Celery) imports this module: sandbox restarts count there.
metrics.install()


@dataclass(frozen=True)
class JobLabels:
    problem_set: str
    problem: str
    kind: str


def graded(submission_id: int, worker: str, labels: JobLabels, result: GradeResult, seconds: float) -> None:
    fields = {
        "event": "grading_job",
        "submission_id": submission_id,
        "worker": worker,
        "problem_set": labels.problem_set,
        "problem": labels.problem,
        "kind": labels.kind,
        "verdict": str(result.verdict),
        "score": result.score,
        "max_score": result.max_score,
        "checks": len(result.checks),
        "duration_ms": round(seconds * 1000, 2),
    }
    log.info("graded submission %s: %s", submission_id, result.verdict, extra={"fields": fields})
    metrics.observe_grading(labels.kind, str(result.verdict), seconds, result.checks)


def failed(submission_id: int, worker: str, labels: JobLabels | None, error: BaseException, seconds: float) -> None:
    fields = {
        "event": "grading_job",
        "submission_id": submission_id,
        "worker": worker,
        "problem_set": labels.problem_set if labels else None,
        "problem": labels.problem if labels else None,
        "kind": labels.kind if labels else None,
        "verdict": "internal_error",
        "error_type": type(error).__name__,
        "duration_ms": round(seconds * 1000, 2),
    }
    log.info("grading submission %s failed on our side", submission_id, extra={"fields": fields})
    metrics.observe_internal_error(type(error).__name__)
