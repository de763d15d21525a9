from __future__ import annotations

import pytest

from graders.answers.identifier import grade_identifier
from graders.answers.specs import IdentifierSpec

EXACT = IdentifierSpec(kind="identifier", answer="generate")
CALLS = IdentifierSpec(kind="identifier", answer="generate", accept_call_forms=True)


@pytest.mark.parametrize(
    "answer", ["generate", "  generate  ", "`generate`", "``generate``", "generate;", "ｇｅｎｅｒａｔｅ"]
)
def test_exact_accepts(answer: str) -> None:
    result = grade_identifier(answer, EXACT)
    assert result.correct and result.normalized == "generate"


@pytest.mark.parametrize("answer", ["generate()", "model.generate", "Generate", "generate_text", "forward", "gen"])
def test_exact_rejects(answer: str) -> None:
    assert not grade_identifier(answer, EXACT).correct


@pytest.mark.parametrize(
    "answer",
    [
        "generate",
        "generate()",
        "model.generate",
        "model.generate()",
        "self.model.generate(input_ids, max_new_tokens=20)",
        "`model.generate()`",
        "model.generate();",
    ],
)
def test_call_forms(answer: str) -> None:
    assert grade_identifier(answer, CALLS).correct


@pytest.mark.parametrize("answer", ["regenerate()", "model.generate.cache", "generate_text()", "model.forward()"])
def test_call_forms_reject(answer: str) -> None:
    assert not grade_identifier(answer, CALLS).correct


def test_dotted_answer_with_call_forms() -> None:
    spec = IdentifierSpec(kind="identifier", answer="nn.Linear", accept_call_forms=True)
    assert grade_identifier("torch.nn.Linear(512, 64)", spec).correct
    assert not grade_identifier("Linear", spec).correct


def test_case_hint() -> None:
    result = grade_identifier("Generate", EXACT)
    assert not result.correct and "case-sensitive" in result.feedback


@pytest.mark.parametrize("answer", ["1generate", "gen erate", "生成?", "model.generate("])
def test_garbage(answer: str) -> None:
    result = grade_identifier(answer, EXACT)
    assert not result.correct and result.feedback.startswith("expected a Python name")


@pytest.mark.parametrize("answer", ["", "``", ";", "   "])
def test_empty(answer: str) -> None:
    assert grade_identifier(answer, EXACT).feedback == "no answer given"
