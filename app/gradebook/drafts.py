"""An assignment back to a draft: only while no student has work in it. Here, not in app.courses, because it reads
submissions (which sit above courses in the layers)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.courses.models import Assignment, MemberRole, Membership
from app.errors import N_, Conflict
from app.submissions.models import Submission


def unpublish(session: Session, assignment: Assignment) -> Assignment:
    """Hide a published assignment from its students again, unless one has submitted to it (Canvas's rule: their
    work would vanish from their view while it still counts)."""
    students = select(Membership.user_id).where(
        Membership.offering_id == assignment.offering_id, Membership.role == MemberRole.STUDENT
    )
    submitted = session.scalar(
        select(Submission.id)
        .where(Submission.assignment_id == assignment.id, Submission.user_id.in_(students))
        .limit(1)
    )
    if submitted is not None:
        raise Conflict(N_("students have submitted to this assignment already, so it stays published"),
                       field="published")  # fmt: skip
    assignment.published_at = None
    session.flush()
    return assignment
