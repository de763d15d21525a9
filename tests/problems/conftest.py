"""Shared helpers for the shipped problem sets' acceptance tests: load a set, find its parts and prompt blanks."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from graders.answers import grade_part
from graders.answers.registry import ANSWER_KINDS, PartSpec
from graders.model import ChoiceProblem, FillInProblem, ProblemSetSpec
from graders.problemset.variants import prompt_names

# (problem id, part id, student answer, expected correct)
Case = tuple[str, str, str, bool]

PROBLEMS_DIR = Path(__file__).resolve().parents[2] / "problems"

# A blank in a prompt is labelled "（b1）", or "(b1)" inside KaTeX where full-width brackets render badly.
_BLANK = re.compile(r"[（(]b(\d+)[）)]")


def load_problem_set(set_id: str) -> ProblemSetSpec:
    """Parse problems/<set_id>/problemset.yaml with the schema, exactly as the loader does."""
    text = (PROBLEMS_DIR / set_id / "problemset.yaml").read_text(encoding="utf-8")
    return ProblemSetSpec.model_validate(yaml.safe_load(text))


@pytest.fixture(scope="session")
def load_set() -> Callable[[str], ProblemSetSpec]:
    """A loader that parses each set once per test session."""
    cache: dict[str, ProblemSetSpec] = {}

    def _load(set_id: str) -> ProblemSetSpec:
        if set_id not in cache:
            cache[set_id] = load_problem_set(set_id)
        return cache[set_id]

    return _load


def part_spec(problem_set: ProblemSetSpec, problem_id: str, part_id: str) -> PartSpec:
    """The spec of part ``b<n>`` of a fill-in or choice problem."""
    problem = problem_set.problem(problem_id)
    assert isinstance(problem, FillInProblem | ChoiceProblem), f"{problem_id} has no auto-graded parts"
    index = int(part_id.removeprefix("b")) - 1
    assert 0 <= index < len(problem.parts), f"{problem_id} has no part {part_id}"
    return problem.parts[index]


def prompt_blanks(text: str) -> list[str]:
    """Blank labels in order of first appearance, e.g. ["b1", "b2"] (a label may be repeated in the instructions)."""
    seen: list[str] = []
    for match in _BLANK.finditer(text):
        label = f"b{match.group(1)}"
        if label not in seen:
            seen.append(label)
    return seen


def check_set_files(set_id: str, problem_set: ProblemSetSpec) -> None:
    """Every prompt/explanation file exists and fill-in prompts label exactly their parts, in order."""
    root = PROBLEMS_DIR / set_id
    for problem in problem_set.problems:
        for rel in (problem.prompt, problem.explanation):
            if rel is not None:
                assert (root / rel).is_file(), f"{problem.id}: {rel} is missing"
        blanks = prompt_blanks((root / problem.prompt).read_text(encoding="utf-8"))
        expected = problem.part_ids() if isinstance(problem, FillInProblem) else []
        assert blanks == expected, f"{problem.id}: prompt labels {blanks}, parts are {expected}"


def _parts(problem_set: ProblemSetSpec) -> Iterator[tuple[str, str, PartSpec]]:
    for problem in problem_set.problems:
        if isinstance(problem, FillInProblem | ChoiceProblem):
            for part_id, spec in zip(problem.part_ids(), problem.parts, strict=True):
                yield problem.id, part_id, spec


def yaml_examples(problem_set: ProblemSetSpec) -> list[Case]:
    """The accept/reject examples written in the YAML, as (problem, part, answer, expected) rows; those written per
    parameter ({%d%}/{%H%}) are the variant gate's, checked on each drawn variant (test_attention_variants.py)."""
    rows: list[Case] = []
    for problem_id, part_id, spec in _parts(problem_set):
        rows += [(problem_id, part_id, answer, True) for answer in spec.accept if not prompt_names(answer)]
        rows += [(problem_id, part_id, answer, False) for answer in spec.reject if not prompt_names(answer)]
    return rows


def failing_yaml_examples(problem_set: ProblemSetSpec) -> list[Case]:
    """The YAML examples the graders decide the other way (the loader refuses a set that has any)."""
    return [
        row
        for row in yaml_examples(problem_set)
        if grade_part(row[2], part_spec(problem_set, row[0], row[1])).correct is not row[3]
    ]


def uncovered_auto_parts(problem_set: ProblemSetSpec, cases: list[Case]) -> list[str]:
    """Auto-graded parts that lack at least one accepted and one rejected case in ``cases``."""
    missing = []
    for problem_id, part_id, spec in _parts(problem_set):
        outcomes = {expected for p, b, _, expected in cases if (p, b) == (problem_id, part_id)}
        if ANSWER_KINDS[spec.kind].auto and outcomes != {True, False}:
            missing.append(f"{problem_id}.{part_id}")
    return missing
