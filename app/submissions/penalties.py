"""What a submission loses when it is graded: the late penalty (its owner's due date) and the attempt decay."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.orm import Session

from app.courses import clock
from app.courses.models import Assignment
from app.courses.policy import Policy, policy_for
from app.courses.service import member_of
from app.submissions.models import Submission
from graders.model import ProblemSetSpec


@dataclass(frozen=True)
class Penalties:
    late: float  # fraction, under the late policy with the owner's override
    decay: float  # fraction, decay per attempt x (attempt - 1)


def grading_penalties(session: Session, sub: Submission, spec: ProblemSetSpec) -> Penalties:
    """Fixed when the submission is graded (a regrade recomputes them), like the late penalty always was."""
    assignment = session.get(Assignment, sub.assignment_id) if sub.assignment_id is not None else None
    member = member_of(session, assignment.offering_id, sub.user_id) if assignment is not None else None
    started = clock.started_at(session, assignment, sub.user_id)
    policy = policy_for(assignment, spec, sub.problem_id, member, started_at=started)
    return penalties_of(policy, created_at=sub.created_at, attempt=sub.attempt)


def penalties_of(policy: Policy, *, created_at: datetime, attempt: int) -> Penalties:
    """The penalties under a policy already worked out (the owner's, with their clock's start)."""
    return Penalties(late=policy.late_penalty(created_at), decay=policy.decay(attempt))
