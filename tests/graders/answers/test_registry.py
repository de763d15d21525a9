"""grade_part and the table of answer kinds, plus properties every grader must have."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter

from graders.answers import grade_part
from graders.answers.registry import ANSWER_KINDS, PartSpec
from graders.answers.specs import AnswerSpec, EssaySpec

SPECS = [
    {"kind": "text", "answers": ["softmax"]},
    {"kind": "choice", "options": ["A", "B", "C"], "answer": ["A", "C"], "multi": True, "scheme": "per_option"},
    {"kind": "numeric", "answer": 0.5},
    {"kind": "matrix", "answer": [[1, 0], [0, 1]]},
    {"kind": "shape", "answer": [2, 3]},
    {"kind": "size", "answer_bytes": 1024},
    {"kind": "symbolic", "answer": "sqrt(d_k)", "symbols": ["d_k"]},
    {"kind": "identifier", "answer": "forward", "accept_call_forms": True},
    {"kind": "essay"},
]
ADAPTER: TypeAdapter[PartSpec] = TypeAdapter(PartSpec)
GARBAGE = [
    "",
    " ",
    "\x00\x01",
    "🤖🤖",
    "'; DROP TABLE submission; --",
    "__import__('os').system('echo hi')",
    "{{7*7}}",
    "[" * 300,
    ")" * 300,
    "\\" * 50,
    "1e309",
    "NaN",
    "-inf",
    "（）【】「」，。；",
    "9" * 1000,
    "x" * 5000,
    "\\frac{",
    "\\sqrt[",
    "^^^",
    "√",
    "²",
]


def test_every_kind_is_tested_here_and_named_by_its_spec() -> None:
    assert set(ANSWER_KINDS) == {s["kind"] for s in SPECS}
    for name, kind in ANSWER_KINDS.items():
        assert kind.name == name and issubclass(kind.spec, AnswerSpec)


@pytest.mark.parametrize("spec", SPECS, ids=[s["kind"] for s in SPECS])
@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_never_raises_and_scores_zero(spec: dict[str, object], text: str) -> None:
    result = grade_part(text, ADAPTER.validate_python(spec))
    assert not result.correct and result.score == 0.0 and result.feedback


@pytest.mark.parametrize(
    ("spec", "answer"),
    list(
        zip(
            SPECS,
            ["Softmax。", "A，C", "1/2", "[[1, 0], [0, 1]]", "(2, 3)", "1 KiB", r"\sqrt{d_k}", "model.forward(x)"],
            strict=False,
        )
    ),
    ids=[s["kind"] for s in SPECS[:-1]],
)
def test_grade_part_dispatches(spec: dict[str, object], answer: str) -> None:
    result = grade_part(answer, ADAPTER.validate_python(spec))
    assert result.correct and result.score == 1.0


def test_essay_awaits_manual_grading() -> None:
    result = grade_part("  Attention lets every token look at every other token.  ", EssaySpec(kind="essay"))
    assert not result.correct and result.score == 0.0
    assert result.feedback == "awaiting manual grading"
    assert result.normalized == "Attention lets every token look at every other token."


def test_essay_empty() -> None:
    assert grade_part("   ", EssaySpec(kind="essay")).feedback == "no answer given"
