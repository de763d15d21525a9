"""Grading a fill-in answer in the request that stores it, instead of sending it through the queue.

A fill-in answer grades in a fraction of a millisecond, but the queue round trip around it (wake a worker, claim
the row under a lease, start a heartbeat, load, record, wake the waiting request, read the row again) cost about
15 ms of server CPU and several database transactions per answer. So the request's worker thread (never the event
loop) grades it itself, when the problem's kind says its grading is plain Python (``grades_in_process``), through
``app.submissions.service.store``:

- the answer is graded before anything is written, with no transaction holding a write lock (a symbolic part may
  wait on the SymPy pool for a while);
- the row is then inserted already graded, with its checks, its grade, its webhook deliveries and its LMS grade
  passback, in one transaction (``record``, inside the store's): it is never queued, so no worker can claim it,
  and it is graded exactly once. A crash before the commit stores nothing (the client's retry stores it once,
  under its Idempotency-Key); a commit that fails on a conflict goes round again like any store;
- a grading that raises, a kind that runs programs, or no free slot: the row is stored queued, and the workers
  grade it with their retry accounting.

At most ``slots`` answers are graded this way at once per process (a symbolic part may wait seconds on SymPy, and
the request threads are shared with every other request); past that they go through the queue.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, cast

from sqlalchemy import Table, insert
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from app.config import Settings
from app.lti.passback import queue_score
from app.submissions.models import CheckResultRow, Grade, Submission
from app.submissions.penalties import Penalties
from app.webhooks.service import enqueue_for
from app.worker import observe
from app.worker.grading import GradingJob, job_labels, result_rows
from graders.code.grader import CodeGraderLike
from graders.code.verdicts import loggable
from graders.grade import grade_submission
from graders.kinds import kind_of
from graders.problemset.loader import LoadedSet
from graders.problemset.variants import Variant
from graders.results import GradeResult

log = logging.getLogger(__name__)
INLINE_SLOTS = 8

_INSERT_CHECK = insert(cast(Table, CheckResultRow.__table__))
_INSERT_GRADE = insert(cast(Table, Grade.__table__))


def _no_code_grader() -> CodeGraderLike:
    raise RuntimeError("a kind that grades in process asked for the code grader")


class InlineGrader:
    """``app.submissions.service.GradesInline`` for the API's requests."""

    def __init__(self, settings: Settings, job: GradingJob, slots: int = INLINE_SLOTS) -> None:
        self.settings, self.job = settings, job
        # With a broker too: an answer sent through Celery cost the API, the workers and the database about 45 ms
        # of CPU more than this, and waited behind code gradings in the workers' queue (bench.bench_class_load,
        # 300 students on 2 cores: fill-in ?wait=10 posts p50 10.5 s against 0.41 s). Code still goes to the
        # workers; an answer this request cannot grade is stored queued and sent, and while the broker is down it
        # waits in the outbox (app/worker/outbox.py).
        self.enabled = settings.grade_answers_inline
        self._slots = threading.BoundedSemaphore(slots)

    def grade(
        self, loaded: LoadedSet, problem_id: str, payload: dict[str, Any], variant: Variant | None = None
    ) -> GradeResult | None:
        """The answer's grade (against the student's ``variant``), or None: not enabled, not a kind graded in
        process, no free slot, or it raised."""
        problem = loaded.spec.problem(problem_id)
        if not self.enabled or problem is None or not kind_of(problem).grades_in_process:
            return None
        if not self._slots.acquire(blocking=False):
            return None
        try:
            result = grade_submission(loaded, problem_id, dict(payload), _no_code_grader, variant)
        except Exception as exc:
            log.warning("an answer to %s left to the workers: grading it in the request failed: %s", problem_id,
                        loggable(f"{type(exc).__name__}: {exc}"))  # fmt: skip
            return None
        finally:
            self._slots.release()
        return result

    def record(
        self, session: Session, sub: Submission, result: GradeResult, penalties: Penalties, *, offering_id: int
    ) -> list[CheckResultRow | Grade]:
        """Insert the checks and the grade of the just-flushed ``sub``, and queue what a grade queues, in the
        store's transaction (not committed here)."""
        rows = result_rows(sub.id, result, penalties)
        # Core statements on the session's connection, the checks in one executemany: the ORM's unit of work
        # costs more than the grading itself.
        connection = session.connection()
        if len(rows) > 1:
            connection.execute(_INSERT_CHECK, [_values(row) for row in rows[:-1]])
        connection.execute(_INSERT_GRADE, [_values(rows[-1])])
        # In the grade's own transaction, as the workers do: a committed grade always has its deliveries queued.
        enqueue_for(session, user_id=sub.user_id, offering_id=offering_id, event_type="submission.graded",
                    submission_id=sub.id)  # fmt: skip
        queue_score(session, user_id=sub.user_id, assignment_id=sub.assignment_id)  # LMS grade passback
        return rows

    def finished(
        self,
        sub: Submission,
        rows: list[CheckResultRow | Grade],
        result: GradeResult,
        loaded: LoadedSet,
        seconds: float,
    ) -> None:
        """After the commit: the response shows the rows without reading them back; waiters are woken."""
        set_committed_value(sub, "checks", rows[:-1])
        set_committed_value(sub, "grade", rows[-1])
        self.job.announce_finished(sub.id)
        observe.graded(sub.id, "inline", job_labels(loaded, sub.problem_id), result, seconds)


def _values(row: CheckResultRow | Grade) -> dict[str, Any]:
    """A new row's column values for a Core insert (its id comes from the database)."""
    return {attr.key: getattr(row, attr.key) for attr in type(row).__mapper__.column_attrs if attr.key != "id"}
