"""Per-question statistics: how many tried, how well they did at best, and which blanks or checks trip them up."""

from __future__ import annotations

import statistics
from collections import defaultdict

from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from app.gradebook.attempts import EPS, Column, best_attempts, columns, load_attempts
from app.gradebook.schemas import CheckStat, ProblemStats, SetStats
from app.problemsets.models import ProblemSetVersion
from app.problemsets.service import get_latest
from app.submissions.models import CheckResultRow, Submission
from app.users.models import Role, User

# Rubric rows say "awaiting manual grading" until an instructor scores the whole submission; they are not a pass rate.
_NOT_A_CHECK = "manual"


def set_stats(session: Session, *, slug: str) -> SetStats:
    """Statistics for every problem of the set's latest version, over student attempts at any version."""
    version = get_latest(session, slug, include_hidden=True)
    attempts = load_attempts(session, version.problem_set_id)
    best = best_attempts(attempts)
    checks = _check_stats(session, version.problem_set_id)
    problems = []
    for col in columns(version, attempts):
        mine = [a for a in attempts if a.problem_id == col.id]
        scores = [a.final_score or 0.0 for (_, pid), a in best.items() if pid == col.id]
        problems.append(_problem_stats(col, len(mine), len({a.user_id for a in mine}), scores, checks[col.id]))
    return SetStats(problem_set=slug, title=version.problem_set.title, version=version.number, problems=problems)


def _problem_stats(
    col: Column, submissions: int, attempted: int, scores: list[float], checks: list[CheckStat]
) -> ProblemStats:
    full = sum(1 for s in scores if col.max_score > 0 and s >= col.max_score - EPS)
    hardest = min(checks, key=lambda c: c.pass_rate, default=None)
    return ProblemStats(
        id=col.id,
        title=col.title,
        max_score=col.max_score,
        submissions=submissions,
        students_attempted=attempted,
        students_graded=len(scores),
        mean_best=round(statistics.fmean(scores), 4) if scores else None,
        median_best=round(statistics.median(scores), 4) if scores else None,
        full_marks_fraction=round(full / len(scores), 4) if scores else None,
        checks=checks,
        hardest_check=hardest.name if hardest is not None and hardest.pass_rate < 1.0 else None,
    )


def _check_stats(session: Session, problem_set_id: int) -> dict[str, list[CheckStat]]:
    """Problem id -> pass rate of each check over every graded student attempt (the same check across versions)."""
    rows = session.execute(
        select(
            Submission.problem_id,
            CheckResultRow.name,
            CheckResultRow.category,
            func.min(CheckResultRow.position).label("position"),
            func.count().label("results"),
            func.sum(case((CheckResultRow.passed.is_(True), 1), else_=0)).label("passed"),
        )
        .join(Submission, CheckResultRow.submission_id == Submission.id)
        .join(ProblemSetVersion, Submission.problem_set_version_id == ProblemSetVersion.id)
        .join(User, Submission.user_id == User.id)
        .where(
            ProblemSetVersion.problem_set_id == problem_set_id,
            User.role == Role.STUDENT,
            CheckResultRow.category != _NOT_A_CHECK,
        )
        .group_by(Submission.problem_id, CheckResultRow.name, CheckResultRow.category)
    ).all()
    out: dict[str, list[CheckStat]] = defaultdict(list)
    for r in sorted(rows, key=lambda r: (r.problem_id, r.position, r.name)):
        passed = int(r.passed or 0)
        out[r.problem_id].append(
            CheckStat(
                name=r.name,
                category=r.category,
                results=r.results,
                passed=passed,
                pass_rate=round(passed / r.results, 4),
            )
        )
    return out
