"""The clock of a timed assignment: it starts when a student first opens the set (page or API) or first submits,
and is stored once; Policy.deadline ends it after the time limit x their override's multiplier, or at the due date."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.courses.models import Assignment, AssignmentStart
from app.db import utcnow


def started_at(session: Session, assignment: Assignment | None, user_id: int) -> datetime | None:
    """When ``user_id``'s clock at a timed assignment started; None when untimed or not started."""
    if assignment is None or not assignment.time_limit_min:
        return None
    return session.scalar(
        select(AssignmentStart.started_at).where(
            AssignmentStart.assignment_id == assignment.id, AssignmentStart.user_id == user_id
        )
    )


def start(session: Session, assignment: Assignment, user_id: int) -> datetime | None:
    """Start the student's clock if it has not started (and the assignment is timed); returns its start.

    Written in its own savepoint and flushed at once, so two tabs opening the set together keep one start (the
    unique constraint picks the first; the other reads it).
    """
    if not assignment.time_limit_min:
        return None
    existing = started_at(session, assignment, user_id)
    if existing is not None:
        return existing
    try:
        with session.begin_nested():
            session.add(AssignmentStart(assignment_id=assignment.id, user_id=user_id, started_at=utcnow()))
    except IntegrityError:
        pass  # another request started it a moment ago
    return started_at(session, assignment, user_id)
