"""Grade passback (AGS): the score a student's LMS should show for an assignment, queued in the grade's transaction.

Called wherever a counted score changes (grading, regrading, a manual grade); the late penalty and the attempt
decay are part of the final score already. One row per (resource link, user) holds the newest score to send, so
queueing twice is harmless and the sender always posts the latest (AGS keeps the score with the newest timestamp).
"""

from __future__ import annotations

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from app.courses import service as courses
from app.courses.models import Assignment
from app.courses.policy import policy_for
from app.db import utcnow
from app.errors import NotFound
from app.gradebook.attempts import best_attempts, columns, load_attempts
from app.lti.models import LtiContext, LtiPassback, LtiPlatform, LtiResourceLink, LtiUser
from app.problemsets.service import spec_of
from app.users.models import User

FULLY_GRADED, PENDING_MANUAL, PENDING = "FullyGraded", "PendingManual", "Pending"


def standing(session: Session, assignment: Assignment, user_id: int) -> tuple[float, float, str, str]:
    """(score, maximum, activityProgress, gradingProgress) of one user at an assignment, as the gradebook counts it.

    A counted attempt at a problem with a rubric that nobody scored yet is PendingManual (the LMS must not show
    it as final); an attempt still queued or being graded is Pending.
    """
    version = courses.version_of(session, assignment)
    spec = spec_of(version)
    attempts = load_attempts(session, assignment, user_id=user_id)
    best = best_attempts(attempts, lambda pid: policy_for(assignment, spec, pid, None).counts)
    cols = columns(version, attempts)
    score = round(sum(a.final_score or 0.0 for a in best.values() if a.problem_id in {c.id for c in cols}), 6)
    maximum = round(sum(c.max_score for c in cols), 6)
    rubric = {c.id for c in cols if c.rubric_points > 0}
    if any(a.final_score is None for a in attempts):
        return score, maximum, "Submitted", PENDING
    if any(a.problem_id in rubric and a.manual_score is None for a in best.values()):
        return score, maximum, "Submitted", PENDING_MANUAL
    done = all(c.id in {a.problem_id for a in best.values()} for c in cols)
    return score, maximum, "Completed" if done else "InProgress", FULLY_GRADED


def _insert_ignore(session: Session, link_id: int, user_id: int) -> None:
    values = {"resource_link_id": link_id, "user_id": user_id, "status": "pending", "version": 0, "sent_version": 0,
              "attempts": 0, "max_score": 0.0, "activity_progress": "Submitted", "grading_progress": PENDING,
              "changed_at": utcnow()}  # fmt: skip
    # Two gradings of one student at once must not fail on the unique pair: the second one finds the row.
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    stmt = insert(LtiPassback).values(**values).on_conflict_do_nothing(index_elements=["resource_link_id", "user_id"])
    session.execute(stmt)


# Built once: every grading asks, and building the statement cost more than running it.
_LINKS_OF = (
    select(LtiResourceLink.id)
    .join(LtiContext, LtiContext.id == LtiResourceLink.context_id)
    .join(LtiPlatform, LtiPlatform.id == LtiContext.platform_id)
    .join(LtiUser, (LtiUser.issuer == LtiPlatform.issuer) & (LtiUser.user_id == bindparam("user_id")))
    .where(LtiResourceLink.assignment_id == bindparam("assignment_id"))
)


def queue_score(session: Session, *, user_id: int, assignment_id: int | None) -> int:
    """Queue the user's current standing for every LTI resource link of the assignment; returns how many."""
    if assignment_id is None:
        return 0
    links = session.execute(_LINKS_OF, {"user_id": user_id, "assignment_id": assignment_id}).all()
    if not links:
        return 0  # not an LMS assignment, or a user the LMS does not know: one cheap query
    assignment = session.get(Assignment, assignment_id)
    assert assignment is not None
    score, maximum, activity, grading = standing(session, assignment, user_id)
    for (link_id,) in links:
        _insert_ignore(session, link_id, user_id)
        session.execute(
            update(LtiPassback)
            .where(LtiPassback.resource_link_id == link_id, LtiPassback.user_id == user_id)
            .values(
                score=score, max_score=maximum, activity_progress=activity, grading_progress=grading,
                version=LtiPassback.version + 1, status="pending", attempts=0, next_attempt_at=utcnow(),
                changed_at=utcnow(),
            )
        )  # fmt: skip
    return len(links)


def retry(session: Session, passback: LtiPassback) -> None:
    """An instructor's retry: due now, with a fresh set of attempts."""
    passback.status, passback.attempts, passback.next_attempt_at = "pending", 0, utcnow()


def offering_passbacks(session: Session, offering_id: int) -> list[tuple[LtiPassback, str, str]]:
    """(row, the student's email, the link's title) of every passback of the offering, newest change first."""
    rows = session.execute(
        select(LtiPassback, User.email, LtiResourceLink.title)
        .join(LtiResourceLink, LtiResourceLink.id == LtiPassback.resource_link_id)
        .join(LtiContext, LtiContext.id == LtiResourceLink.context_id)
        .join(User, User.id == LtiPassback.user_id)
        .where(LtiContext.offering_id == offering_id)
        .order_by(User.email, LtiResourceLink.id)
    ).all()
    return [(r[0], r[1], r[2]) for r in rows]


def passback_in(session: Session, offering_id: int, passback_id: int) -> LtiPassback:
    """A passback row of this offering; 404 for any other (the caller learns nothing of other offerings)."""
    row = session.scalar(
        select(LtiPassback)
        .join(LtiResourceLink, LtiResourceLink.id == LtiPassback.resource_link_id)
        .join(LtiContext, LtiContext.id == LtiResourceLink.context_id)
        .where(LtiPassback.id == passback_id, LtiContext.offering_id == offering_id)
    )
    if row is None:
        raise NotFound(f"no grade passback {passback_id} in this offering", field="passback_id", location="path")
    return row
