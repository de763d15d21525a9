"""Grading a fill-in answer in the thread that stored it, instead of sending it through the queue.

A fill-in answer grades in a fraction of a millisecond, but the queue round trip around it (wake a worker, claim
the row under a lease, start a heartbeat, load, record, wake the waiting request, read the row again) cost about
15 ms of server CPU and several database transactions per answer. So the request's worker thread (never the event
loop) grades it itself, when the problem's kind says its grading is plain Python (``grades_in_process``):

- the submission is committed as queued first, by ``service.create``, with a "not before" ``hold_s`` seconds
  away (``not_before``) so that a worker's poll does not race the request for it: a crash from here on loses
  nothing, the workers take the row once the hold is over;
- it is graded with no transaction open (a symbolic part may wait on the SymPy pool for a while);
- the grade is written under the same kind of condition as a claim: only while the row is still queued and was
  never claimed (``started_at`` is NULL), in the one transaction that also inserts its checks. If a worker took
  the row meanwhile, its grade stands and this one is dropped, so a submission is graded once;
- a grading that fails, or a write that fails (a busy database), leaves the row queued for the workers, whose
  retry accounting applies (the attempt is counted by the grading that fails there): the hold is lifted
  (``release``) and the submission dispatched as any other.

At most ``slots`` answers are graded this way at once per process (a symbolic part may wait seconds on SymPy, and
the request threads are shared with every other request); past that they go through the queue.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timedelta
from typing import Any, cast

from sqlalchemy import Table, bindparam, insert, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from app.config import Settings
from app.db import utcnow
from app.lti.passback import queue_score
from app.problemsets.service import loaded_version
from app.submissions.models import CheckResultRow, Grade, Status, Submission
from app.submissions.penalties import grading_penalties
from app.webhooks.service import enqueue_event
from app.worker import observe
from app.worker.grading import GradingJob, job_labels, result_rows
from graders.code.grader import CodeGraderLike
from graders.code.verdicts import loggable
from graders.grade import grade_submission
from graders.kinds import kind_of

log = logging.getLogger(__name__)
INLINE_SLOTS = 8
HOLD_S = 5.0

_submissions = cast(Table, Submission.__table__)
_submission = _submissions.c
# Graded only if it is still queued and nobody ever claimed it: a worker that took it first keeps it.
_FINISH = (
    update(_submissions)
    .where(_submission.id == bindparam("sid"), _submission.status == Status.QUEUED, _submission.started_at.is_(None))
    .values(status=Status.GRADED, started_at=bindparam("now"), graded_at=bindparam("now"), lease_until=None)
)
_RELEASE = (
    update(_submissions)
    .where(_submission.id == bindparam("sid"), _submission.status == Status.QUEUED, _submission.started_at.is_(None))
    .values(lease_until=None)
)
_INSERT_CHECK = insert(cast(Table, CheckResultRow.__table__))
_INSERT_GRADE = insert(cast(Table, Grade.__table__))


def _no_code_grader() -> CodeGraderLike:
    raise RuntimeError("a kind that grades in process asked for the code grader")


class InlineGrader:
    def __init__(self, settings: Settings, job: GradingJob, slots: int = INLINE_SLOTS) -> None:
        self.settings, self.job = settings, job
        # Only in the embedded default: with a broker the workers grade everything, and a post made while the
        # broker is down stays queued for the outbox (app/worker/outbox.py).
        self.enabled = settings.grade_answers_inline and settings.broker_url is None
        self._slots = threading.BoundedSemaphore(slots)

    def not_before(self) -> datetime | None:
        """The hold a new submission is stored with while this process tries to grade it (None: no inline)."""
        return utcnow() + timedelta(seconds=HOLD_S) if self.enabled else None

    def release(self, session: Session, submission_id: int) -> None:
        """Lift the hold of a submission left to the workers, so they take it now; if this fails it just expires."""
        try:
            session.connection().execute(_RELEASE, {"sid": submission_id})
            session.commit()
        except Exception as exc:
            session.rollback()
            log.warning("could not lift the hold of submission %s: %s", submission_id, loggable(exc))

    def try_grade(self, session: Session, sub: Submission) -> bool:
        """Grade and record a submission that ``session`` just stored; False leaves it queued for the workers."""
        if not self.enabled:
            return False
        sub_id, user_id, assignment_id = sub.id, sub.user_id, sub.assignment_id  # a rollback expires the instance
        start = time.perf_counter()
        try:
            loaded = loaded_version(self.settings, sub.problem_set_version)
            problem = loaded.spec.problem(sub.problem_id)
            if problem is None or not kind_of(problem).grades_in_process:
                return False
            if not self._slots.acquire(blocking=False):
                return False
            try:
                result = grade_submission(loaded, sub.problem_id, dict(sub.payload), _no_code_grader)
            finally:
                self._slots.release()
            rows = result_rows(sub_id, result, grading_penalties(session, sub, loaded.spec))
            now = utcnow()
            # Core statements on the session's connection, the checks in one executemany: the ORM's bulk paths
            # and its unit of work cost more than the grading itself.
            connection = session.connection()
            if connection.execute(_FINISH, {"sid": sub_id, "now": now}).rowcount != 1:
                session.rollback()  # a worker claimed it first: its grade stands
                return False
            if len(rows) > 1:
                connection.execute(_INSERT_CHECK, [_values(row) for row in rows[:-1]])
            connection.execute(_INSERT_GRADE, [_values(rows[-1])])
            # In the grade's own transaction, as the workers do: a committed grade always has its deliveries queued.
            enqueue_event(session, user_id=user_id, event_type="submission.graded", submission_id=sub_id)
            queue_score(session, user_id=user_id, assignment_id=assignment_id)  # LMS grade passback
            session.commit()
        except Exception as exc:
            session.rollback()
            log.warning("submission %s left to the workers: grading it in the request failed: %s", sub_id,
                        loggable(f"{type(exc).__name__}: {exc}"))  # fmt: skip
            return False
        # What the response shows, without reading the rows back.
        for name, value in (("status", Status.GRADED), ("started_at", now), ("graded_at", now), ("lease_until", None)):
            set_committed_value(sub, name, value)
        set_committed_value(sub, "checks", rows[:-1])
        set_committed_value(sub, "grade", rows[-1])
        self.job.announce_finished(sub_id)
        observe.graded(sub_id, "inline", job_labels(loaded, sub.problem_id), result, time.perf_counter() - start)
        return True


def _values(row: CheckResultRow | Grade) -> dict[str, Any]:
    """A new row's column values for a Core insert (its id comes from the database)."""
    return {attr.key: getattr(row, attr.key) for attr in type(row).__mapper__.column_attrs if attr.key != "id"}
