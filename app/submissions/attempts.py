"""The rows the gradebook and the statistics are built from: students' attempts at a set, with their grades."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session

from app.courses.models import Assignment, Counts, MemberRole, Membership, MemberStatus
from app.problemsets.models import ProblemSetVersion
from app.submissions.models import Grade, Submission, round_score
from app.users.models import User

EPS = 1e-9


@dataclass(frozen=True)
class Attempt:
    id: int
    user_id: int
    problem_id: str
    attempt: int
    status: str
    final_score: float | None  # None until a grade row exists
    max_score: float | None
    manual_score: float | None
    variant_seed: int | None = None  # the variant it answered (a problem with parameters)


@dataclass(frozen=True)
class Column:
    id: str
    title: str
    kind: str
    max_score: float
    rubric_points: float


def student_ids(session: Session, offering_id: int) -> Select[int | None]:
    """The offering's students (any status: a dropped student's scores stay in the book)."""
    return select(Membership.user_id).where(
        Membership.offering_id == offering_id, Membership.role == MemberRole.STUDENT, Membership.user_id.is_not(None)
    )


def load_attempts(session: Session, assignment: Assignment, *, user_id: int | None = None) -> list[Attempt]:
    """Every student submission under the assignment (any version of its set), oldest first; staff test runs are
    left out unless ``user_id`` asks for one user's attempts (whatever the role)."""
    who = User.id == user_id if user_id is not None else User.id.in_(student_ids(session, assignment.offering_id))
    rows = session.execute(
        select(
            Submission.id,
            Submission.user_id,
            Submission.problem_id,
            Submission.attempt,
            Submission.status,
            Grade.final_score,  # NULL without a grade row (the outer join)
            Grade.manual_score,
            Grade.max_score,
            Submission.variant_seed,
        )
        .join(User, Submission.user_id == User.id)
        .outerjoin(Grade, Grade.submission_id == Submission.id)
        .where(Submission.assignment_id == assignment.id, who)
        .order_by(Submission.id)
    ).all()
    # A grade row is written only by a successful grading, so it counts even while a regrade is queued: the
    # gradebook keeps the old score until the new one replaces it instead of flickering to "not graded".
    return [
        Attempt(
            id=r.id,
            user_id=r.user_id,
            problem_id=r.problem_id,
            attempt=r.attempt,
            status=r.status,
            final_score=None if r.final_score is None else round_score(r.final_score),
            max_score=r.max_score,
            manual_score=r.manual_score,
            variant_seed=r.variant_seed,
        )
        for r in rows
    ]


def columns(version: ProblemSetVersion, attempts: list[Attempt]) -> list[Column]:
    """The problems of the latest version, in set order. Attempts at problems it dropped are not shown."""
    points = version.validation_report.get("points", {})
    out = []
    for problem in version.spec.get("problems", []):
        pid = problem["id"]
        # Code problems validated without a grader have no points in the report; their grades know them.
        seen = [a.max_score for a in attempts if a.problem_id == pid and a.max_score is not None]
        max_score = float(points.get(pid) or (max(seen) if seen else 0.0))
        rubric = sum(float(item["points"]) for item in problem.get("rubric", []))
        out.append(Column(pid, problem.get("title", pid), problem.get("kind", ""), max_score, rubric))
    return out


def best_attempts(
    attempts: list[Attempt], counts: Callable[[str], str] = lambda problem_id: Counts.BEST
) -> dict[tuple[int, str], Attempt]:
    """(user id, problem id) -> the graded attempt that counts: under "best" the highest final score (ties go to
    the earliest), under "last" the latest graded one. ``counts`` gives each problem's rule."""
    best: dict[tuple[int, str], Attempt] = {}
    for a in attempts:  # oldest first
        if a.final_score is None:
            continue
        key = (a.user_id, a.problem_id)
        current = best.get(key)
        if current is None or counts(a.problem_id) == Counts.LAST or a.final_score > (current.final_score or 0.0) + EPS:
            best[key] = a
    return best


def students(session: Session, offering_id: int, user_ids: set[int]) -> list[User]:
    """The offering's active students, plus dropped or inactive ones who submitted something (their scores count)."""
    query = (
        select(User, Membership.status)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.offering_id == offering_id, Membership.role == MemberRole.STUDENT)
        .order_by(User.email)
    )
    return [
        u for u, status in session.execute(query) if (u.is_active and status == MemberStatus.ACTIVE) or u.id in user_ids
    ]


def variant_rounds(session: Session, assignment: Assignment, user_id: int) -> dict[str, int]:
    """Problem id -> how many new variants the student has drawn under ``new_variant_after`` (their next attempt's
    variant: attempts so far // N); empty when the assignment keeps one variant per student."""
    every = assignment.new_variant_after
    if not every or assignment.shared_variant:
        return {}
    used = session.execute(
        select(Submission.problem_id, func.count())
        .where(Submission.assignment_id == assignment.id, Submission.user_id == user_id)
        .group_by(Submission.problem_id)
    )
    return {problem_id: count // every for problem_id, count in used}
