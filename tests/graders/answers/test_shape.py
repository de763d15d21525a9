from __future__ import annotations

import pytest

from graders.answers.shape import grade_shape
from graders.answers.specs import ShapeSpec

QKV = ShapeSpec(kind="shape", answer=[8, 8, 128, 32])


@pytest.mark.parametrize(
    "answer",
    [
        "8×8×128×32",
        "(8, 8, 128, 32)",
        "8x8x128x32",
        "8 x 8 x 128 x 32",
        "[8,8,128,32]",
        "8*8*128*32",
        "8 8 128 32",
        "torch.Size([8, 8, 128, 32])",
        "（８，８，１２８，３２）",
        "８×８×１２８×３２",
        "［8，8，128，32］",
        "8X8X128X32。",
    ],
)
def test_accepts(answer: str) -> None:
    result = grade_shape(answer, QKV)
    assert result.correct and result.normalized == "8×8×128×32"


@pytest.mark.parametrize(
    ("answer", "feedback"),
    [
        ("8×128×32", "expected 4 dimensions, got 3"),
        ("8×8×8×128×32", "expected 4 dimensions, got 5"),
        ("8×8×32×128", "2 of 4 dimensions are not right"),  # forgot the transpose
        ("8×128×8×32", "2 of 4 dimensions are not right"),
    ],
)
def test_rejects(answer: str, feedback: str) -> None:
    result = grade_shape(answer, QKV)
    assert not result.correct and result.feedback == feedback


def test_one_dimensional_tuple() -> None:
    assert grade_shape("(8,)", ShapeSpec(kind="shape", answer=[8])).correct


@pytest.mark.parametrize("answer", ["(B, T, C)", "8.0×8×128×32", "8×-8×128×32", "eight", "8××8", "(8, 8"])
def test_garbage(answer: str) -> None:
    result = grade_shape(answer, QKV)
    assert not result.correct and result.feedback.startswith("expected a shape")


def test_empty() -> None:
    assert grade_shape(" ", QKV).feedback == "no answer given"
