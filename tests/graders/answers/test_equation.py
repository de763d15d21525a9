"""Answers written as equations (``d/H = 32``, ``Var(S) = d_k``, ``≈ 0.6698``): the last side is graded."""

from __future__ import annotations

import math

import pytest

from graders.answers.equation import label_key, last_side
from graders.answers.numeric import grade_numeric, numeric_format_error
from graders.answers.shape import grade_shape
from graders.answers.specs import NumericSpec, ShapeSpec, SymbolicSpec
from graders.answers.symbolic import grade_symbolic, symbolic_format_error

D_HEAD = NumericSpec(kind="numeric", answer=32, names=["d/H", "d_head"])
ANYTHING_NAMED = NumericSpec(kind="numeric", answer=0)
WEIGHT = NumericSpec(kind="numeric", answer=math.exp(1 / math.sqrt(2)) / (math.exp(1 / math.sqrt(2)) + 1))
VARIANCE = SymbolicSpec(kind="symbolic", answer="d_k", symbols=["d_k"], names=["Var(S)"])


@pytest.mark.parametrize("answer", ["d/H = 32", "d/H=32", "d / H = 32", "d_head = 32", "d/H = 256/8 = 32", "= 32"])
def test_a_named_value_is_read_as_its_value(answer: str) -> None:
    result = grade_numeric(answer, D_HEAD)
    assert result.correct, result.feedback
    assert result.normalized == "32"


def test_a_name_the_blank_does_not_ask_for_is_refused_with_a_reason() -> None:
    result = grade_numeric("H = 32", D_HEAD)
    assert not result.correct
    assert "'H' is not what this blank asks for" in result.feedback and "d/H" in result.feedback


def test_a_wrong_value_on_the_left_is_wrong() -> None:
    result = grade_numeric("256/4 = 32", D_HEAD)
    assert not result.correct and "not right" in result.feedback


@pytest.mark.parametrize("answer", ["E(S)=0", "E[S] = 0", "mean = 0", "答案 = 0"])
def test_a_part_without_names_reads_any_label(answer: str) -> None:
    assert grade_numeric(answer, ANYTHING_NAMED).correct


@pytest.mark.parametrize("answer", ["≈0.6698", "≈ 0.67", "约0.6698", "p ≈ 0.6698", "exp(1/√2)/[exp(1/√2)+1]"])
def test_approximately_and_square_brackets(answer: str) -> None:
    result = grade_numeric(answer, WEIGHT.model_copy(update={"rtol": 1e-3}))
    assert result.correct, result.feedback


@pytest.mark.parametrize("answer", ["32维", "32 维", "32个", "32 dims", "d/H = 32维"])
def test_a_count_with_its_noun(answer: str) -> None:
    assert grade_numeric(answer, D_HEAD).correct


@pytest.mark.parametrize("answer", ["3万", "32 != 1", "[32]", "[3][2]"])
def test_what_is_still_no_number(answer: str) -> None:
    assert numeric_format_error(answer, D_HEAD) is not None


@pytest.mark.parametrize("answer", ["Var(S) = d_k", "Var(S)=d_k", "d_k"])
def test_a_formula_after_its_name(answer: str) -> None:
    assert grade_symbolic(answer, VARIANCE).correct


def test_a_formula_after_another_name_is_refused() -> None:
    result = grade_symbolic("E(S) = d_k", VARIANCE)
    assert not result.correct and "not what this blank asks for" in result.feedback
    assert symbolic_format_error("E(S) = d_k", VARIANCE) is None  # an answer, graded: not a format error


@pytest.mark.parametrize(
    "answer",
    [
        "8\\times8\\times128\\times32",
        "$8 \\times 8 \\times 128 \\times 32$",
        "8·8·128·32",
        "(B, H, T, d) = (8, 8, 128, 32)",
    ],
)
def test_shapes_in_latex_and_as_equations(answer: str) -> None:
    assert grade_shape(answer, ShapeSpec(kind="shape", answer=[8, 8, 128, 32])).correct


def test_the_label_key_ignores_spacing_markup_and_bracket_kind() -> None:
    assert label_key("$\\mathrm{E}[S]$") == label_key("E(S)")
    assert last_side("a = b = 3") == "3" and last_side("3") == "3"
