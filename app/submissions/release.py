"""What a submission's viewer may see now, under its assignment's release policy (scores, check feedback, the
explanation, the answer key). Every reader asks here: the API, the pages, and through the API the CLI and CSV."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Assignment, Membership
from app.courses.permissions import Action
from app.courses.policy import Release, policy_for
from app.db import utcnow
from app.problemsets.service import spec_of
from app.submissions.allocation import attempts_used
from app.submissions.models import Grade, Submission
from graders.model import ProblemSetSpec

EPS = 1e-9


@dataclass(frozen=True)
class Seal:
    """True: shown. ``staff`` sees everything (and the internal error)."""

    staff: bool
    due_at: datetime | None
    scores: bool
    feedback: bool
    explanation: bool
    answer_key: bool

    @property
    def sealed_anything(self) -> bool:
        return not (self.scores and self.feedback)


def full_marks(session: Session, *, user_id: int, assignment_id: int | None, problem_id: str) -> bool:
    """Whether any graded attempt of this student at this problem of this assignment earned every point."""
    best = session.scalar(
        select(func.max(Grade.auto_score + func.coalesce(Grade.manual_score, 0.0) - Grade.max_score))
        .join(Submission, Grade.submission_id == Submission.id)
        .where(
            Submission.user_id == user_id,
            Submission.assignment_id == assignment_id,
            Submission.problem_id == problem_id,
            Grade.max_score > 0,
        )
    )
    return best is not None and best >= -EPS


def seal_for(session: Session, sub: Submission, access: Access, spec: ProblemSetSpec | None = None) -> Seal:
    spec = spec or spec_of(sub.problem_set_version)
    return seal_of(session, access, sub.assignment, spec, user_id=sub.user_id, problem_id=sub.problem_id)


def seal_of(
    session: Session,
    access: Access,
    assignment: Assignment | None,
    spec: ProblemSetSpec,
    *,
    user_id: int,
    problem_id: str,
) -> Seal:
    """What ``access`` may see now of ``user_id``'s results at one problem of an assignment."""
    offering_id = assignment.offering_id if assignment else None
    member = courses.member_of(session, offering_id, user_id) if offering_id is not None else None
    assignment_id = assignment.id if assignment else None

    def used() -> int:
        return attempts_used(session, user_id=user_id, assignment_id=assignment_id, problem_id=problem_id)[0]

    def full() -> bool:
        return full_marks(session, user_id=user_id, assignment_id=assignment_id, problem_id=problem_id)

    return _seal(access, assignment, spec, member, problem_id, used, full)


def seal_of_new(
    session: Session,
    access: Access,
    sub: Submission,
    spec: ProblemSetSpec,
    *,
    assignment: Assignment | None,
    member: Membership | None,
    full_now: bool,
) -> Seal:
    """``seal_for`` a submission just stored: with the assignment and membership its store read, and its own
    attempt as the attempts used (what the student had used when it was stored). ``full_now``: its own grade
    earned every point, so no earlier attempt needs looking at."""

    def full() -> bool:
        if full_now:
            return True
        assignment_id = assignment.id if assignment else None
        return full_marks(session, user_id=sub.user_id, assignment_id=assignment_id, problem_id=sub.problem_id)

    return _seal(access, assignment, spec, member, sub.problem_id, lambda: sub.attempt, full)


def is_full(score: float, max_score: float) -> bool:
    """The test of ``full_marks`` for one grade's automatic score."""
    return max_score > 0 and score - max_score >= -EPS


def _seal(
    access: Access,
    assignment: Assignment | None,
    spec: ProblemSetSpec,
    member: Membership | None,
    problem_id: str,
    used_attempts: Callable[[], int],
    full_marks_now: Callable[[], bool],
) -> Seal:
    offering_id = assignment.offering_id if assignment else None
    staff = access.can(offering_id, Action.VIEW_UNRELEASED) or (offering_id is None and access.is_admin)
    policy = policy_for(assignment, spec, problem_id, member)
    if staff:
        return Seal(True, policy.due_at, True, True, True, True)
    # Only a release after the attempts asks how many were used and whether one earned every point.
    counted = any(when == Release.AFTER_ATTEMPTS for when in policy.release.values())
    used, full = (used_attempts(), full_marks_now()) if counted else (0, False)
    now = utcnow()

    def shown(what: str) -> bool:
        return policy.released(what, now=now, attempts_used=used, full_marks=full)

    return Seal(False, policy.due_at, shown("scores"), shown("feedback"), shown("explanation"), shown("answer_key"))


class SealCache:
    """Seals for a list of submissions: one per (assignment, problem, owner), not one per row."""

    def __init__(self, session: Session, access: Access) -> None:
        self.session, self.access = session, access
        self._seals: dict[tuple[int | None, str, int], Seal] = {}
        self._specs: dict[int, ProblemSetSpec] = {}

    def __call__(self, sub: Submission) -> Seal:
        key = (sub.assignment_id, sub.problem_id, sub.user_id)
        if key not in self._seals:
            vid = sub.problem_set_version_id
            spec = self._specs.get(vid) or self._specs.setdefault(vid, spec_of(sub.problem_set_version))
            self._seals[key] = seal_for(self.session, sub, self.access, spec)
        return self._seals[key]
