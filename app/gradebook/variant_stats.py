"""Statistics of a problem with parameters by variant: is one variant, or one value of a parameter, harder?

Each student's counted attempt is put under the variant it answered (its seed) and, through the numbers that
variant showed (stored in ``problem_variant``), under each parameter's value. With a variant per student most
variants have one student, so the per-parameter rows are the ones that answer the question; the per-variant rows
show a shared variant, or a seed that many attempts drew under ``new_variant_after``.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.gradebook.schemas import ParameterValueStats, VariantStats
from app.problemsets.models import ProblemSetVersion, ProblemVariant
from app.submissions.attempts import EPS, Attempt
from graders.problemset.variants import format_value

MAX_VALUES = 10  # a parameter with more values among the students (a derived size) gives no useful rows


def variant_breakdown(
    session: Session, problem_set_id: int, problem_id: str, counted: list[Attempt], max_score: float
) -> tuple[list[VariantStats], list[ParameterValueStats]]:
    """Per variant and per parameter value, the counted scores of those who answered it; empty lists when no
    counted attempt answered a variant."""
    by_seed: dict[int, list[float]] = defaultdict(list)
    for a in counted:
        if a.variant_seed is not None:
            by_seed[a.variant_seed].append(a.final_score or 0.0)
    if not by_seed:
        return [], []
    shown = _params(session, problem_set_id, problem_id, set(by_seed))
    variants = sorted(
        (
            VariantStats(
                seed=seed,
                params=shown.get(seed, {}),
                students_graded=len(scores),
                mean_best=round(statistics.fmean(scores), 4),
                full_marks_fraction=round(sum(1 for s in scores if s >= max_score - EPS) / len(scores), 4),
            )
            for seed, scores in by_seed.items()
        ),
        key=lambda v: (v.mean_best, -v.students_graded, v.seed),
    )
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for seed, scores in by_seed.items():
        for name, value in shown.get(seed, {}).items():
            values[name][format_value(value)].extend(scores)
    names = list(dict.fromkeys(name for params in shown.values() for name in params))  # the generator's order
    by_parameter = [
        ParameterValueStats(
            name=name, value=value, students_graded=len(scores), mean_best=round(statistics.fmean(scores), 4)
        )
        for name in names
        if 2 <= len(values[name]) <= MAX_VALUES
        for value, scores in sorted(values[name].items(), key=lambda kv: _order(kv[0]))
    ]
    return variants, by_parameter


def _params(session: Session, problem_set_id: int, problem_id: str, seeds: set[int]) -> dict[int, dict[str, Any]]:
    """Seed -> the parameters its stored variant shows (any version of the set: one seed's numbers at the newest
    version that stored it)."""
    rows = session.execute(
        select(ProblemVariant.seed, ProblemVariant.data)
        .join(ProblemSetVersion, ProblemVariant.problem_set_version_id == ProblemSetVersion.id)
        .where(
            ProblemSetVersion.problem_set_id == problem_set_id,
            ProblemVariant.problem_id == problem_id,
            ProblemVariant.seed.in_(seeds),
        )
        .order_by(ProblemVariant.problem_set_version_id)
    )
    return {seed: dict(data.get("params", {})) for seed, data in rows}


def _order(text: str) -> tuple[int, float, str]:
    """Numbers by value (4 before 16), then words."""
    try:
        return 0, float(text), text
    except ValueError:
        return 1, 0.0, text
