"""Grade one claimed submission and record the result idempotently (a result is written once per claim)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any, TypeVar

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.db import database_unavailable, session_scope, utcnow
from app.lti.passback import queue_score
from app.problemsets.models import ProblemSetVersion
from app.problemsets.service import loaded_version
from app.problemsets.variants import variant_of
from app.submissions.models import CheckResultRow, Grade, Status, Submission
from app.submissions.penalties import Penalties, grading_penalties
from app.webhooks.service import enqueue_event
from app.worker import observe
from app.worker.claims import renew, retry_delay_s
from graders.code.grader import CodeGraderLike
from graders.code.verdicts import loggable
from graders.grade import grade_submission
from graders.input_limits import storable
from graders.problemset.loader import LoadedSet
from graders.problemset.variants import Variant
from graders.results import GradeResult
from graders.sandbox.errors import SandboxError

log = logging.getLogger(__name__)
GRADER_VERSION = "1"
T = TypeVar("T")
# What a claimed job grades: the set, the problem, the payload, the penalties and the submission's variant.
_Claimed = tuple[LoadedSet, str, dict[str, object], Penalties, Variant | None]


class GradingJob:
    """Everything a worker needs to grade: settings, a session factory, and a lazily built code grader."""

    def __init__(
        self,
        settings: Settings,
        session_factory: sessionmaker[Session],
        code_grader: Callable[[], CodeGraderLike],
        requeue: Callable[[int], None] | None = None,
    ) -> None:
        self.settings = settings
        self.session_factory = session_factory
        self.code_grader = code_grader
        # Celery needs a job sent again after an internal error; the embedded pool finds queued rows by itself.
        self.requeue = requeue
        # Told the id of every submission whose grade (or final error) was just committed: wakes ?wait requests.
        self.on_finished: Callable[[int], None] | None = None

    def run(self, submission_id: int, worker: str) -> None:
        """Grade a claimed job. Any failure is ours, not the student's: it is retried, never scored 0."""
        start, labels = time.perf_counter(), None
        try:
            # The lease is renewed from the claim on: unpacking a set version can take a while too.
            with Heartbeat(self.session_factory, submission_id, worker, self.settings.job_lease_s):
                claimed = self._patiently(lambda: self._load(submission_id, worker), submission_id)
                if claimed is None:
                    return
                loaded, problem_id, payload, penalty, variant = claimed
                labels = job_labels(loaded, problem_id)
                result = grade_submission(loaded, problem_id, payload, self.code_grader, variant)
            if self._patiently(lambda: self._record(submission_id, worker, result, penalty), submission_id):
                self.announce_finished(submission_id)
                observe.graded(submission_id, worker, labels, result, time.perf_counter() - start)
        except Exception as exc:
            observe.failed(submission_id, worker, labels, exc, time.perf_counter() - start)
            # A sandbox failure's message can quote what the submission left behind (file names): escaped, no
            # traceback. Anything else is a bug of ours and keeps its traceback.
            log.error("internal error grading submission %s: %s", submission_id,
                      loggable(f"{type(exc).__name__}: {exc}"), exc_info=not isinstance(exc, SandboxError))  # fmt: skip
            message = f"{type(exc).__name__}: {exc}"
            self._patiently(lambda: self._record_failure(submission_id, worker, message), submission_id)

    def _patiently(self, write: Callable[[], T], submission_id: int) -> T:
        """Run a read or write of this job, waiting out a database that is down or locked: the grade in hand is
        written once it is back (still under this worker's claim, which each write checks), not thrown away and
        graded again. Gives up after the lease: by then another worker may take the job over anyway."""
        deadline, delay, told = time.monotonic() + self.settings.grading_lease_s, 0.5, False
        while True:
            try:
                return write()
            except Exception as exc:
                if not database_unavailable(exc) or time.monotonic() + delay > deadline:
                    raise
                if not told:  # one line per outage, not one per try
                    log.warning("database unavailable while grading submission %s (%s); waiting for it",
                                submission_id, loggable(str(getattr(exc, "orig", exc))))  # fmt: skip
                    told = True
            time.sleep(delay)
            delay = min(5.0, delay * 2)

    def _load(self, submission_id: int, worker: str) -> _Claimed | None:
        with session_scope(self.session_factory) as session:
            sub = session.get(Submission, submission_id)
            if sub is None or sub.claimed_by != worker:
                return None
            version = session.get(ProblemSetVersion, sub.problem_set_version_id)
            assert version is not None
            loaded = loaded_version(self.settings, version)
            problem = loaded.spec.problem(sub.problem_id)
            variant = None
            # The seed stored with the submission: a regrade (on this version or a newer one) keeps the variant.
            if sub.variant_seed is not None and problem is not None and problem.generator is not None:
                variant = variant_of(session, self.settings, version, loaded, problem, sub.variant_seed)
            penalties = grading_penalties(session, sub, loaded.spec)
            return loaded, sub.problem_id, dict(sub.payload), penalties, variant

    def announce_finished(self, submission_id: int) -> None:
        """Wake whoever waits for this submission's grade (a ?wait request); never raises."""
        if self.on_finished is not None:
            try:
                self.on_finished(submission_id)
            except Exception as exc:  # a waiter's safety poll still finds the grade
                log.warning("could not announce that submission %s is finished: %s", submission_id, loggable(exc))

    def _record(self, submission_id: int, worker: str, result: GradeResult, penalties: Penalties) -> bool:
        """Write the checks and the grade; False when the job was taken over meanwhile (nothing written)."""
        with session_scope(self.session_factory) as session:
            sub = session.get(Submission, submission_id, with_for_update=True)
            if sub is None or sub.claimed_by != worker or sub.status != Status.RUNNING:
                log.warning("submission %s was taken over while grading; result dropped", submission_id)
                return False
            previous = session.scalar(select(Grade).where(Grade.submission_id == submission_id))
            rows = result_rows(submission_id, result, penalties, previous)  # before the delete: it reads previous
            session.execute(delete(CheckResultRow).where(CheckResultRow.submission_id == submission_id))
            session.execute(delete(Grade).where(Grade.submission_id == submission_id))
            session.add_all(rows)
            sub.status, sub.graded_at, sub.lease_until, sub.error = Status.GRADED, utcnow(), None, None
            # In the grade's own transaction: a committed grade always has its webhook deliveries queued.
            event = "submission.regraded" if previous is not None else "submission.graded"
            enqueue_event(session, user_id=sub.user_id, event_type=event, submission_id=submission_id)
            queue_score(session, user_id=sub.user_id, assignment_id=sub.assignment_id)  # LMS grade passback
        return True

    def _record_failure(self, submission_id: int, worker: str, message: str) -> None:
        requeued = False
        with session_scope(self.session_factory) as session:
            sub = session.get(Submission, submission_id, with_for_update=True)
            if sub is None or sub.claimed_by != worker:
                return
            sub.grading_attempts += 1
            sub.error = f"internal grading error (attempt {sub.grading_attempts}): {message}"[:2000]
            sub.claimed_by = None
            sub.status = Status.ERROR if sub.grading_attempts >= self.settings.max_grading_attempts else Status.QUEUED
            requeued = sub.status == Status.QUEUED
            if not requeued:
                enqueue_event(session, user_id=sub.user_id, event_type="submission.error", submission_id=submission_id)
            # Back off before the retry (a queued row's lease_until is its "not before"): a sandbox that fails
            # right now will likely fail again at once.
            sub.lease_until = utcnow() + timedelta(seconds=retry_delay_s(sub.grading_attempts)) if requeued else None
        if not requeued:
            self.announce_finished(submission_id)
        if requeued and self.requeue is not None:
            self.requeue(submission_id)


def job_labels(loaded: LoadedSet, problem_id: str) -> observe.JobLabels:
    problem = loaded.spec.problem(problem_id)
    return observe.JobLabels(loaded.spec.id, problem_id, problem.kind if problem is not None else "unknown")


def storable_words(words: dict[str, Any] | None) -> dict[str, Any] | None:
    """Words for the JSON column, or None where they hold a NUL (which PostgreSQL refuses): the text then."""
    return None if words is None or "\\u0000" in json.dumps(words) else words


def result_rows(
    submission_id: int, result: GradeResult, penalties: Penalties, previous: Grade | None = None
) -> list[CheckResultRow | Grade]:
    """The check rows and the grade of one grading (the grade last); ``previous`` is the grade a regrade replaces."""
    rows: list[CheckResultRow | Grade] = [
        CheckResultRow(
            submission_id=submission_id,
            position=position,
            name=check.name,
            category=check.category,
            passed=check.passed,
            score=check.score,
            max_score=check.max_score,
            feedback=storable(check.feedback),
            visibility=str(check.visibility),
            duration_ms=check.duration_ms,
            words=storable_words(check.words),
        )
        for position, check in enumerate(result.checks)
    ]
    # A regrade replaces the automatic part only: what an instructor scored by hand stays.
    grade = Grade(
        submission_id=submission_id,
        auto_score=result.score,
        max_score=result.max_score,
        verdict=str(result.verdict),
        message=storable(result.message),
        grader_version=GRADER_VERSION,
        late_penalty=penalties.late,
        attempt_decay=penalties.decay,
        graded_at=utcnow(),
        manual_score=previous.manual_score if previous is not None else None,
        manual_feedback=previous.manual_feedback if previous is not None else None,
        manual_graded_by_id=previous.manual_graded_by_id if previous is not None else None,
    )
    # A regrade of a hand-graded submission is no longer pending: the verdict describes the final score.
    grade.settle_pending()
    rows.append(grade)
    return rows


class Heartbeat:
    """Renews a job's lease every third of it while the job is graded, so a long grading is never taken over.

    Only a worker that died or hangs lets its lease run out (three beats: AUTOGRADER_GRADING_HEARTBEAT_S), on
    whichever host it ran. A renewal that fails (the database is busy) is tried again within a second; one that
    finds the job taken over or regraded stops beating.
    """

    def __init__(self, session_factory: sessionmaker[Session], submission_id: int, worker: str, lease_s: float) -> None:
        self.session_factory, self.submission_id = session_factory, submission_id
        self.worker, self.lease_s = worker, lease_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease-{submission_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        every = self.lease_s / 3
        while not self._stop.wait(every):
            try:
                with session_scope(self.session_factory) as session:
                    if not renew(session, self.submission_id, worker=self.worker, lease_s=self.lease_s):
                        return
                every = self.lease_s / 3
            except Exception as exc:
                # Tried again soon, not a beat later: one renewal that failed must not lose the lease.
                if every == self.lease_s / 3:
                    log.warning("could not renew the lease of submission %s: %s", self.submission_id, loggable(exc))
                every = min(1.0, self.lease_s / 6)
