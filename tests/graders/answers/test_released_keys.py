"""Every answer kind says its released key: what a student sees once the answer key is released."""

from __future__ import annotations

import pytest

from graders.answers.registry import ANSWER_KINDS, grade_part
from graders.grade import answer_key
from graders.model import FillInProblem
from tests.graders.answers.test_registry import ADAPTER, SPECS

EXPECTED = {
    "text": "softmax",
    "choice": "A, C",
    "numeric": "0.5",
    "matrix": "[[1.0, 0.0], [0.0, 1.0]]",
    "shape": "[2, 3]",
    "size": "1024",
    "symbolic": "sqrt(d_k)",
    "identifier": "forward",
}


@pytest.mark.parametrize("raw", SPECS, ids=[s["kind"] for s in SPECS])
def test_every_kind_scored_automatically_has_a_key(raw: dict[str, object]) -> None:
    # test_registry checks that SPECS holds one spec of every registered kind, so a new kind is checked here too.
    spec = ADAPTER.validate_python(raw)
    kind = ANSWER_KINDS[spec.kind]
    key = kind.released_key(spec)
    if kind.auto:
        assert key, f"answer kind {spec.kind!r} releases an empty answer key"
        assert key == EXPECTED.get(spec.kind, key)
    else:
        assert key is None  # scored by hand: there is no reference answer to show


def test_the_answer_key_of_a_problem_has_every_part_that_has_one() -> None:
    problem = FillInProblem.model_validate(
        {"kind": "fill_in", "id": "q1", "title": "t", "prompt": "prompts/q1.md", "parts": SPECS}
    )
    key = answer_key(problem)
    assert key == {f"b{i}": EXPECTED[s["kind"]] for i, s in enumerate(SPECS, start=1) if s["kind"] in EXPECTED}


def test_a_text_part_that_accepts_by_pattern_alone_has_no_key() -> None:
    spec = ADAPTER.validate_python({"kind": "text", "regex": "soft ?max"})
    assert ANSWER_KINDS["text"].released_key(spec) is None


@pytest.mark.parametrize(("answer", "shown"), [(1048576, "1048576"), (0.6698, "0.6698"), (1 / 3, "0.3333333333333333")])
def test_a_numeric_key_is_written_in_full_and_its_own_grader_accepts_it(answer: float, shown: str) -> None:
    # Written with :g, an exact count read 1.04858e+06, which the part (atol 0.5) itself refused.
    spec = ADAPTER.validate_python({"kind": "numeric", "answer": answer, "rtol": 0, "atol": 0.5 if answer > 1 else 0})
    key = ANSWER_KINDS["numeric"].released_key(spec)
    assert key == shown
    assert grade_part(key, spec).correct
