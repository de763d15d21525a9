"""What an override (an extension, another late penalty) changes in grades already given: the late penalty of the
affected students' graded submissions at that assignment is recomputed under the new dates, as a regrade would,
without running the grader again; their LMS score is queued for passback in the same transaction.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.courses.models import Assignment, Membership, MemberStatus, Override
from app.lti.passback import queue_score
from app.problemsets.service import spec_of
from app.submissions.models import Grade, Status, Submission
from app.submissions.penalties import grading_penalties


def affected_users(session: Session, override: Override) -> list[int]:
    """The accounts an override applies to: its member, or the members of its section."""
    if override.membership_id is not None:
        member = session.get(Membership, override.membership_id)
        return [member.user_id] if member is not None and member.user_id is not None else []
    rows = session.scalars(
        select(Membership.user_id).where(
            Membership.offering_id == override.assignment.offering_id, Membership.section == override.section,
            Membership.status == MemberStatus.ACTIVE, Membership.user_id.is_not(None),
        )
    )  # fmt: skip
    return sorted({uid for uid in rows if uid is not None})


def rescore(session: Session, assignment: Assignment, user_ids: list[int]) -> int:
    """Recompute the late penalty of these users' graded submissions at the assignment under its overrides as they
    are now, and queue their LMS passback; returns how many grades changed. The caller commits."""
    session.flush()
    session.expire(assignment, ["overrides"])  # a deleted override must not count any more
    changed = 0
    for user_id in user_ids:
        rows = session.execute(
            select(Submission, Grade)
            .join(Grade, Grade.submission_id == Submission.id)
            .where(Submission.assignment_id == assignment.id, Submission.user_id == user_id,
                   Submission.status == Status.GRADED)
        ).all()  # fmt: skip
        for sub, grade in rows:
            late = grading_penalties(session, sub, spec_of(sub.problem_set_version)).late
            if abs(late - grade.late_penalty) > 1e-12:
                grade.late_penalty = late
                changed += 1
        session.flush()
        queue_score(session, user_id=user_id, assignment_id=assignment.id)  # LMS grade passback
    return changed
