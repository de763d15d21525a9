"""Seed 001's Q4 is parameterised (problems/attention/generators/q4.py): its generator passes the variant gate in
the set's jailed checker, seed 0 is the set's own numbers, and other seeds give other numbers."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graders.code.checker.pool import CheckerPool
from graders.grade import answer_key, validate_set
from graders.problemset.loader import load_problem_set
from graders.problemset.variant_gate import gate_seeds
from graders.problemset.variants import apply_variant, parse_variant, render_prompt
from graders.sandbox.config import SandboxConfig

SET_ROOT = Path(__file__).resolve().parents[2] / "problems" / "attention"


@pytest.fixture(scope="module")
def pool() -> Iterator[CheckerPool]:
    checkers = CheckerPool(SandboxConfig(mode="bwrap", slots=1))
    yield checkers
    checkers.close()


class _Source:
    def __init__(self, pool: CheckerPool) -> None:
        self.pool = pool

    def variant(self, root: Any, relative: str, seed: int) -> Any:
        return self.pool.variant(Path(root), relative, seed)


def test_q4_passes_the_variant_gate(pool) -> None:  # type: ignore[no-untyped-def]
    report = validate_set(load_problem_set(SET_ROOT), code_grader=None, only={"q4"}, variants=_Source(pool))
    assert report.ok, report.render_text()
    assert any(note.startswith("q4: 20 variants drawn") for note in report.notes)
    # Q4's examples written per parameter ({%d%}/{%H%}, {%B%}*{%T%}^2 ...), checked on each of the 20 variants.
    plain = validate_set(load_problem_set(SET_ROOT), code_grader=None, only={"q4"})
    assert report.answer_cases - plain.answer_cases == 10 * 20


def test_seed_0_is_todays_numbers_and_others_differ(pool) -> None:  # type: ignore[no-untyped-def]
    loaded = load_problem_set(SET_ROOT)
    problem = loaded.spec.problem("q4")
    assert problem is not None and problem.generator == "generators/q4.py"
    variants = [parse_variant(pool.variant(SET_ROOT, problem.generator, s), problem) for s in gate_seeds("q4", 6)]
    today = variants[0]
    assert answer_key(apply_variant(problem, today)) == answer_key(problem)  # the YAML's own answers
    assert render_prompt(loaded.prompt("q4"), today).count("$d=256$，头数 $H=8$，批量 $B=8$，序列长度 $T=128$") == 1
    assert len({tuple(sorted(v.params.items())) for v in variants}) > 1


def test_q1_passes_the_variant_gate_and_seed_0_is_todays_numbers(pool) -> None:  # type: ignore[no-untyped-def]
    """Q1 (attention weights from given Q, K, V): each student their own diag(q1, q2) and V; seed 0 is the set's
    own numbers (Q = K = I, V = [[2, 0], [0, 4]]), its key the YAML's and its explanation today's words."""
    loaded = load_problem_set(SET_ROOT)
    report = validate_set(loaded, code_grader=None, only={"q1"}, variants=_Source(pool))
    assert report.ok, report.render_text()
    assert any(note.startswith("q1: 20 variants drawn, 20 different prompts") for note in report.notes)
    plain = validate_set(loaded, code_grader=None, only={"q1"})
    assert report.answer_cases - plain.answer_cases == 12 * 20  # its examples written per parameter, per variant
    problem = loaded.spec.problem("q1")
    assert problem is not None and problem.generator == "generators/q1.py"
    variants = [parse_variant(pool.variant(SET_ROOT, problem.generator, s), problem) for s in gate_seeds("q1", 6)]
    today = variants[0]
    assert answer_key(apply_variant(problem, today)) == answer_key(problem)
    prompt = render_prompt(loaded.prompt("q1"), today)
    assert r"\begin{bmatrix}1&0\\0&1\end{bmatrix}" in prompt and r"\begin{bmatrix}2&0\\0&4\end{bmatrix}" in prompt
    explanation = render_prompt(loaded.text(problem.explanation or ""), today)
    assert (
        r"\approx0.6698" in explanation and r"\begin{bmatrix}1.3395&1.3210\\0.6605&2.6790\end{bmatrix}" in explanation
    )
    assert len({tuple(sorted(v.params.items())) for v in variants}) == 6
    for variant in variants[1:]:  # each variant's own key is right for it, and the set's own key is not
        mine = apply_variant(problem, variant)
        assert answer_key(mine) != answer_key(problem)
