"""Allocate the next attempt number under the (user, assignment, problem, attempt) unique constraint.

Two concurrent posts read the same "last attempt"; the second insert then fails on the constraint (PostgreSQL) or
on SQLite's one-writer lock, and goes round again, reading the new last attempt and checking the limits again. So
no two submissions share a number and an attempt limit of N lets exactly N through.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from sqlalchemy import bindparam, func, select
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session

from app.courses.policy import Policy, TooManyAttempts
from app.db import utcnow
from app.errors import N_, Conflict
from app.submissions.models import Submission

MAX_ROUNDS = 60


# Built once (asked by every store and every seal): building the statement cost more than running it.
_ATTEMPTS = select(func.max(Submission.attempt), func.max(Submission.created_at)).where(
    Submission.user_id == bindparam("user_id"),
    Submission.assignment_id == bindparam("assignment_id"),
    Submission.problem_id == bindparam("problem_id"),
)


def attempts_used(
    session: Session, *, user_id: int, assignment_id: int | None, problem_id: str
) -> tuple[int, datetime | None]:
    """(the highest attempt number so far, when the latest was made)."""
    if assignment_id is None:
        row = session.execute(
            select(func.max(Submission.attempt), func.max(Submission.created_at)).where(
                Submission.user_id == user_id, Submission.assignment_id.is_(None), Submission.problem_id == problem_id
            )
        ).one()
    else:
        row = session.execute(
            _ATTEMPTS, {"user_id": user_id, "assignment_id": assignment_id, "problem_id": problem_id}
        ).one()
    return int(row[0] or 0), row[1]


def check_limits(policy: Policy, used: int, last_at: datetime | None, now: datetime, problem_id: str) -> None:
    """Refuse an attempt beyond the limit (no retry) or inside the cooldown (with when the next one is possible)."""
    if policy.max_attempts is not None and used >= policy.max_attempts:
        raise TooManyAttempts(
            f"no attempts left at {problem_id}: all {policy.max_attempts} are used", retry_after=None,
            next_attempt_at=None, problem_id=problem_id, max_attempts=policy.max_attempts,
        )  # fmt: skip
    if policy.cooldown_s and last_at is not None:
        ready = last_at + timedelta(seconds=policy.cooldown_s)
        if now < ready:
            wait = max(1, int((ready - now).total_seconds() + 0.999))
            raise TooManyAttempts(
                f"wait before the next attempt at {problem_id}: possible at {ready:%Y-%m-%d %H:%M:%S} UTC "
                f"(in {wait} s)",
                retry_after=wait,
                next_attempt_at=ready,
                problem_id=problem_id,
            )


def store_next_attempt(
    session: Session,
    *,
    make: Callable[[int], Submission],
    user_id: int,
    assignment_id: int | None,
    problem_id: str,
    policy: Policy | None,
    on_conflict: Callable[[], Submission | None],
    before_commit: Callable[[Submission], None] | None = None,
) -> tuple[Submission, bool]:
    """Insert ``make(attempt)`` with the next free attempt number; ``policy`` None skips the limits (staff).

    ``on_conflict`` looks for the row that beat us to the same Idempotency-Key: returned as (row, False).
    ``before_commit`` writes what goes with the row in its transaction (a grade made in the request); a conflict
    there goes round again like one on the row itself.
    """
    for _ in range(MAX_ROUNDS):
        used, last_at = attempts_used(session, user_id=user_id, assignment_id=assignment_id, problem_id=problem_id)
        if policy is not None:
            check_limits(policy, used, last_at, utcnow(), problem_id)
        submission = make(used + 1)
        session.add(submission)
        try:
            if before_commit is not None:
                before_commit(submission)
            session.commit()
            return submission, True
        except (IntegrityError, OperationalError):
            session.rollback()
            winner = on_conflict()
            if winner is not None:
                return winner, False
    raise Conflict(N_("too many submissions at the same moment; try again"), field="problem")
