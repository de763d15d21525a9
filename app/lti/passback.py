"""Grade passback (AGS): the score a student's LMS should show for an assignment, queued in the grade's transaction.

Called wherever a counted score changes (grading, regrading, a manual grade); the late penalty and the attempt
decay are part of the final score already. One row per (resource link, user) holds the newest score to send, so
queueing twice is harmless and the sender always posts the latest (AGS keeps the score with the newest timestamp).

The release policy holds: a score the student may not see yet on our pages (``seal_of``, the pages' own rule) is
not posted; the row is ``held`` until a release opens it: a release by date (after the due date, after everyone's
late days) is looked at again then by the LTI job (``release_due``), a change of the policy by ``requeue_held``,
a new attempt or an override by the grading that queues again.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from app.courses import service as courses
from app.courses.access import access_for
from app.courses.models import Assignment, Release
from app.courses.policy import DAY, policy_for
from app.db import session_scope, utcnow
from app.errors import NotFound
from app.lti.models import LtiContext, LtiPassback, LtiPlatform, LtiResourceLink, LtiUser
from app.problemsets.models import ProblemSetVersion
from app.problemsets.service import spec_of
from app.submissions.attempts import Attempt, best_attempts, columns, load_attempts
from app.submissions.release import seal_of
from app.users.models import User

FULLY_GRADED, PENDING_MANUAL, PENDING = "FullyGraded", "PendingManual", "Pending"


@dataclass(frozen=True)
class Hold:
    """Whether the release policy hides the user's score at the assignment from them now, and when a release by
    date may show it (None: no date will; a policy change, an attempt or an override may)."""

    held: bool
    recheck_at: datetime | None = None


def hold_of(session: Session, assignment: Assignment, version: ProblemSetVersion, user_id: int,
            problem_ids: set[str]) -> Hold:  # fmt: skip
    """The release policy for the problems the user attempted, as their own pages apply it (``seal_of``): held
    while the score of any of them is sealed, so the LMS never shows a total the student may not see here."""
    user = session.get(User, user_id)
    if user is None or not problem_ids:
        return Hold(False)
    spec = spec_of(version)
    access = access_for(session, user)
    member = courses.member_of(session, assignment.offering_id, user_id)
    now, dates = utcnow(), []
    held = False
    for pid in sorted(problem_ids):
        if seal_of(session, access, assignment, spec, user_id=user_id, problem_id=pid).scores:
            continue
        held = True
        policy = policy_for(assignment, spec, pid, member)
        when = policy.release["scores"]
        if when == Release.AFTER_DUE and policy.due_at is not None:
            dates.append(policy.due_at)
        elif when == Release.AFTER_ATTEMPTS and policy.due_at is not None:  # closed for everyone (strictly after)
            dates.append(policy.due_at + policy.max_late_days * DAY + timedelta(seconds=1))
    if not held:
        return Hold(False)
    return Hold(True, max(min(dates), now + timedelta(seconds=1)) if dates else None)


def standing(session: Session, assignment: Assignment, user_id: int) -> tuple[float, float, str, str]:
    """(score, maximum, activityProgress, gradingProgress) of one user at an assignment, as the gradebook counts it.

    A counted attempt at a problem with a rubric that nobody scored yet is PendingManual (the LMS must not show
    it as final); an attempt still queued or being graded is Pending.
    """
    version = courses.version_of(session, assignment)
    return _standing(session, assignment, version, user_id, load_attempts(session, assignment, user_id=user_id))


def _standing(
    session: Session, assignment: Assignment, version: ProblemSetVersion, user_id: int, attempts: list[Attempt]
) -> tuple[float, float, str, str]:
    spec = spec_of(version)
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
    version = courses.version_of(session, assignment)
    attempts = load_attempts(session, assignment, user_id=user_id)
    score, maximum, activity, grading = _standing(session, assignment, version, user_id, attempts)
    hold = hold_of(session, assignment, version, user_id, {a.problem_id for a in attempts})
    # Held: kept here (the LMS page shows it "held until release"), not posted; due at its release by date.
    status, due = ("held", hold.recheck_at) if hold.held else ("pending", utcnow())
    for (link_id,) in links:
        _insert_ignore(session, link_id, user_id)
        session.execute(
            update(LtiPassback)
            .where(LtiPassback.resource_link_id == link_id, LtiPassback.user_id == user_id)
            .values(
                score=score, max_score=maximum, activity_progress=activity, grading_progress=grading,
                version=LtiPassback.version + 1, status=status, attempts=0, next_attempt_at=due,
                changed_at=utcnow(),
            )
        )  # fmt: skip
    return len(links)


def _link_assignment(session: Session, passback: LtiPassback) -> int:
    assignment_id = session.scalar(
        select(LtiResourceLink.assignment_id).where(LtiResourceLink.id == passback.resource_link_id)
    )
    assert assignment_id is not None
    return int(assignment_id)


def retry(session: Session, passback: LtiPassback) -> None:
    """An instructor's retry: the standing queued again now, with a fresh set of attempts (still held while the
    release policy hides it)."""
    queue_score(session, user_id=passback.user_id, assignment_id=_link_assignment(session, passback))


def requeue_held(session: Session, assignment_id: int) -> int:
    """After a change of the assignment's policy (its release, dates, attempts): the held scores looked at again
    (posted now if released); returns how many students'."""
    users = sorted(
        set(
            session.scalars(
                select(LtiPassback.user_id)
                .join(LtiResourceLink, LtiResourceLink.id == LtiPassback.resource_link_id)
                .where(LtiResourceLink.assignment_id == assignment_id, LtiPassback.status == "held")
            )
        )
    )
    for user_id in users:
        queue_score(session, user_id=user_id, assignment_id=assignment_id)
    return len(users)


def release_due(factory: sessionmaker[Session], limit: int = 50) -> int:
    """The held scores whose release by date has come, looked at again (the LTI job, every round); each row is
    claimed first (a conditional UPDATE), so several processes look at one once. Returns how many."""
    now = utcnow()
    with factory() as session:
        due = list(
            session.execute(
                select(LtiPassback.id, LtiPassback.user_id, LtiResourceLink.assignment_id)
                .join(LtiResourceLink, LtiResourceLink.id == LtiPassback.resource_link_id)
                .where(LtiPassback.status == "held", LtiPassback.next_attempt_at <= now)
                .order_by(LtiPassback.next_attempt_at)
                .limit(limit)
            )
        )
    done = 0
    for row_id, user_id, assignment_id in due:
        with session_scope(factory) as session:
            claimed = session.execute(
                update(LtiPassback)
                .where(LtiPassback.id == row_id, LtiPassback.status == "held", LtiPassback.next_attempt_at <= now)
                .values(next_attempt_at=None)
            )
            if getattr(claimed, "rowcount", 0) == 1:
                queue_score(session, user_id=user_id, assignment_id=assignment_id)
                done += 1
    return done


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
