"""The rows the gradebook and the statistics are built from: students' attempts at a set, with their grades."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.problemsets.models import ProblemSetVersion
from app.submissions.models import Grade, Submission, round_score
from app.users.models import Role, User

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


@dataclass(frozen=True)
class Column:
    id: str
    title: str
    kind: str
    max_score: float
    rubric_points: float


def load_attempts(session: Session, problem_set_id: int, *, user_id: int | None = None) -> list[Attempt]:
    """Every student submission to any version of the set, oldest first; staff test runs are left out unless
    ``user_id`` asks for one user's attempts (whatever the role)."""
    who = User.id == user_id if user_id is not None else User.role == Role.STUDENT
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
        )
        .join(ProblemSetVersion, Submission.problem_set_version_id == ProblemSetVersion.id)
        .join(User, Submission.user_id == User.id)
        .outerjoin(Grade, Grade.submission_id == Submission.id)
        .where(ProblemSetVersion.problem_set_id == problem_set_id, who)
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


def best_attempts(attempts: list[Attempt]) -> dict[tuple[int, str], Attempt]:
    """(user id, problem id) -> the graded attempt with the highest final score; ties go to the earliest."""
    best: dict[tuple[int, str], Attempt] = {}
    for a in attempts:
        if a.final_score is None:
            continue
        key = (a.user_id, a.problem_id)
        current = best.get(key)
        if current is None or a.final_score > (current.final_score or 0.0) + EPS:
            best[key] = a
    return best


def students(session: Session, user_ids: set[int]) -> list[User]:
    """Active students, plus inactive ones who submitted something (their scores still count)."""
    query = select(User).where(User.role == Role.STUDENT).order_by(User.email)
    return [u for u in session.scalars(query) if u.is_active or u.id in user_ids]
