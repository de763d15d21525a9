"""The gate of a parameterised problem, with its generator run in a real jailed checker: a good generator passes;
one that is not deterministic, runs past its time, or gives an answer its own part refuses is refused."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graders.code.checker.pool import CheckerPool
from graders.grade import validate_set
from graders.problemset.loader import load_problem_set
from graders.problemset.variants import Variant, apply_variant, parse_variant, render_prompt
from graders.sandbox.config import SandboxConfig

YAML = """\
id: vars
title: Variants
problems:
  - id: q1
    kind: fill_in
    title: Sum
    prompt: prompts/q1.md
    parameters: [a, b]
    generator: generators/q1.py
    parts:
      - {kind: numeric, answer: 5, rtol: 0, atol: 0, accept: ["5"], reject: ["6"]}
      - {kind: text, answers: [five]}
"""
PROMPT = "What is $a+b$ for $a={%a%}$ and $b={%b%}$?（b1）______ In words:（b2）______\n"
GOOD = """\
import random

WORDS = {5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}

def generate(seed):
    rng = random.Random(seed)
    a, b = (2, 3) if seed == 0 else (rng.randint(1, 5), rng.randint(4, 5))
    return {"params": {"a": a, "b": b}, "parts": {"b1": {"answer": a + b}, "b2": {"answers": [WORDS[a + b]]}}}
"""
NOT_DETERMINISTIC = """\
calls = []

def generate(seed):
    calls.append(seed)  # a second draw of the same seed differs
    a = len(calls)
    return {"params": {"a": a, "b": 1}, "parts": {"b1": {"answer": a + 1}}}
"""
HANGS = """\
def generate(seed):
    if seed == 0:
        return {"params": {"a": 2, "b": 3}}
    while True:
        pass
"""
WRONG_OWN_ANSWER = """\
def generate(seed):
    # A bug: the word is left empty for every seed but 0, and the part's own grader accepts no empty answer.
    return {"params": {"a": 2, "b": 3}, "parts": {"b2": {"answers": ["five" if seed == 0 else " "]}}}
"""


class _Source:
    def __init__(self, pool: CheckerPool, timeout_s: float) -> None:
        self.pool, self.timeout_s = pool, timeout_s

    def variant(self, root: Any, relative: str, seed: int) -> Any:
        return self.pool.variant(Path(root), relative, seed, timeout_s=self.timeout_s)


@pytest.fixture(scope="module")
def pool() -> Iterator[CheckerPool]:
    checkers = CheckerPool(SandboxConfig(mode="bwrap", slots=1))
    yield checkers
    checkers.close()


def make_set(root: Path, generator: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "generators").mkdir()
    (root / "problemset.yaml").write_text(YAML)
    (root / "prompts" / "q1.md").write_text(PROMPT)
    (root / "generators" / "q1.py").write_text(textwrap.dedent(generator))
    return root


def gate(root: Path, pool: CheckerPool, timeout_s: float = 5.0) -> Any:
    return validate_set(load_problem_set(root), code_grader=None, variants=_Source(pool, timeout_s), variant_draws=8)


def test_a_deterministic_generator_whose_answers_its_parts_accept_passes(tmp_path, pool) -> None:  # type: ignore[no-untyped-def]
    report = gate(make_set(tmp_path / "s", GOOD), pool)
    assert report.ok, report.render_text()
    assert any("8 variants drawn" in note for note in report.notes)
    assert report.to_dict()["variant_parts"] == {"q1": ["b1", "b2"]}  # what the generator rewrites (aliases read it)


def test_a_generator_that_is_not_deterministic_is_refused(tmp_path, pool) -> None:  # type: ignore[no-untyped-def]
    report = gate(make_set(tmp_path / "s", NOT_DETERMINISTIC), pool)
    assert not report.ok
    assert "not deterministic" in report.render_text()


def test_a_generator_that_runs_past_its_time_is_refused(tmp_path, pool) -> None:  # type: ignore[no-untyped-def]
    report = gate(make_set(tmp_path / "s", HANGS), pool, timeout_s=1.0)
    assert not report.ok
    assert "ran past its 1 s" in report.render_text()


def test_a_generator_whose_answer_fails_its_own_grader_is_refused(tmp_path, pool) -> None:  # type: ignore[no-untyped-def]
    report = gate(make_set(tmp_path / "s", WRONG_OWN_ANSWER), pool)
    assert not report.ok
    text = report.render_text()
    assert "b2" in text and "is not accepted by its grader" in text


def test_without_a_checker_the_generator_is_noted_not_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    report = validate_set(load_problem_set(make_set(tmp_path / "s", GOOD)), code_grader=None)
    assert report.ok and any("generator not run" in note for note in report.notes)


def test_what_a_generator_returns_is_validated_as_plain_data(tmp_path) -> None:  # type: ignore[no-untyped-def]
    problem = load_problem_set(make_set(tmp_path / "s", GOOD)).spec.problems[0]
    ok = parse_variant({"params": {"a": 1, "b": 4}, "parts": {"b1": {"answer": 5}}}, problem)
    assert render_prompt(PROMPT, ok).startswith("What is $a+b$ for $a=1$ and $b=4$?")
    assert apply_variant(problem, ok).answer_parts()[0].answer == 5  # type: ignore[attr-defined]
    for bad in (
        {"params": {"a": 1}},  # a parameter missing
        {"params": {"a": 1, "b": float("nan")}},  # not a finite number
        {"params": {"a": 1, "b": {"x": 1}}},  # not a value a prompt shows
        {"params": {"a": 1, "b": 2}, "parts": {"b9": {"answer": 3}}},  # no such part
        {"params": {"a": 1, "b": 2}, "parts": {"b1": {"points": 10}}},  # the same points for every student
        {"params": {"a": 1, "b": 2}, "parts": {"b1": {"answer": "three"}}},  # not the part's own kind of answer
        {"params": {"a": 1, "b": 2}, "code": "import os"},  # nothing else
    ):
        with pytest.raises(ValueError):
            parse_variant(bad, problem)
    assert isinstance(ok, Variant)


def test_a_prompt_naming_an_undeclared_parameter_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    root = make_set(tmp_path / "s", GOOD)
    (root / "prompts" / "q1.md").write_text(PROMPT + "And {%c%}?\n")
    from graders.problemset.errors import ProblemSetInvalid

    with pytest.raises(ProblemSetInvalid, match="c"):
        load_problem_set(root)


def with_examples(root: Path, accept: str, reject: str) -> Path:
    text = (root / "problemset.yaml").read_text()
    edited = text.replace('accept: ["5"], reject: ["6"]', f'accept: ["5", "{accept}"], reject: ["6", "{reject}"]')
    assert edited != text
    (root / "problemset.yaml").write_text(edited)
    return root


def test_examples_written_per_parameter_are_checked_on_every_drawn_variant(tmp_path, pool) -> None:  # type: ignore[no-untyped-def]
    """``{%a%}+{%b%}`` is each variant's own right answer and ``{%a%}*{%b%}`` a wrong one: checked on the 8
    variants drawn (not against the YAML's numbers); an example that fails on one variant is refused, naming
    its seed and what it read there."""
    good = gate(with_examples(make_set(tmp_path / "good", GOOD), "{%a%}+{%b%}", "{%a%}*{%b%}"), pool)
    assert good.ok, good.render_text()
    plain = gate(make_set(tmp_path / "plain", GOOD), pool)
    assert good.answer_cases == plain.answer_cases + 2 * 8  # two examples on each of the 8 variants
    bad = gate(with_examples(make_set(tmp_path / "bad", GOOD), "{%a%}+{%b%}", "{%b%}+{%a%}"), pool)
    assert not bad.ok
    text = bad.render_text()
    assert "seed 0: '{%b%}+{%a%}' (here '3+2') should be rejected" in text


def test_an_example_naming_an_undeclared_parameter_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from graders.problemset.errors import ProblemSetInvalid

    root = with_examples(make_set(tmp_path / "s", GOOD), "{%a%}+{%c%}", "0")
    with pytest.raises(ProblemSetInvalid, match=r"names \['c'\]"):
        load_problem_set(root)
