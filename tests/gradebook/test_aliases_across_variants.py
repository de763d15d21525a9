""" "Accept as right" on a problem with parameters (issue 27): an alias is one written answer, so it joins only a
part whose key is the same for every variant (the generator leaves it alone), and there it holds in every
variant; a part the generator gives per variant refuses it, and the statistics offer none for it."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from app.errors import Invalid
from app.problemsets.aliases import Alias, check_alias, rewritten_parts, takes_alias, with_alias
from graders.answers.registry import grade_part
from graders.problemset.archive import ArchiveLimits, unpack_archive
from graders.problemset.loader import load_problem_set
from graders.problemset.variants import apply_variant, parse_variant

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
      - {kind: text, answers: [sum]}
"""
GENERATOR = """\
WORDS = {5: "five", 6: "six", 7: "seven"}

def generate(seed):
    a = 2 + seed % 3
    return {"params": {"a": a, "b": 3}, "parts": {"b1": {"answer": a + 3}, "b2": {"answers": [WORDS[a + 3]]}}}
"""
REPORT = {"variant_parts": {"q1": ["b1", "b2"]}}  # as the gate records it (tests/graders/problemset)


@pytest.fixture
def loaded(tmp_path: Path):  # type: ignore[no-untyped-def]
    root = tmp_path / "vars"
    (root / "prompts").mkdir(parents=True)
    (root / "generators").mkdir()
    (root / "problemset.yaml").write_text(YAML)
    (root / "prompts" / "q1.md").write_text("$a={%a%}$, $b={%b%}$:（b1）（b2）（b3）\n")
    (root / "generators" / "q1.py").write_text(textwrap.dedent(GENERATOR))
    return load_problem_set(root)


def test_a_part_the_generator_gives_per_variant_takes_no_alias(loaded) -> None:  # type: ignore[no-untyped-def]
    problem = loaded.spec.problems[0]
    assert rewritten_parts(problem, REPORT) == {"b1", "b2"}
    with pytest.raises(Invalid, match="each student's variant"):
        check_alias(loaded, Alias("q1", "b2", "FIVE!"), REPORT)
    assert not takes_alias(problem, problem.answer_parts()[1], "b2", REPORT)
    # A version validated before the gate recorded the parts: every part of the problem counts as rewritten.
    with pytest.raises(Invalid, match="each student's variant"):
        check_alias(loaded, Alias("q1", "b3", "addition"), {})


def test_an_alias_on_a_part_the_same_for_all_holds_in_every_variant(loaded, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    problem = loaded.spec.problems[0]
    assert takes_alias(problem, problem.answer_parts()[2], "b3", REPORT)
    archive = with_alias(loaded, Alias("q1", "b3", "addition"), REPORT)
    root = unpack_archive(archive, "vars.tar.gz", tmp_path / "new", ArchiveLimits())
    edited = load_problem_set(root).spec.problems[0]
    for seed in (0, 1, 2):
        raw = {"params": {"a": 2 + seed, "b": 3}, "parts": {"b1": {"answer": 5 + seed}, "b2": {"answers": ["x"]}}}
        mine = apply_variant(edited, parse_variant(raw, edited))
        assert grade_part("addition", mine.answer_parts()[2]).correct  # the alias, in this variant too
        assert not grade_part("addition", mine.answer_parts()[1]).correct
