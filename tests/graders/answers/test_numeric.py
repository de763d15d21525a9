from __future__ import annotations

import math

import pytest

from graders.answers.numeric import grade_numeric
from graders.answers.specs import NumericSpec

# sigmoid(1/sqrt(2)), a value from the chapter's attention-weight exercise.
SIGMOID = 1 / (1 + math.exp(-1 / math.sqrt(2)))
WEIGHT = NumericSpec(kind="numeric", answer=SIGMOID, rtol=1e-2)
BIG = NumericSpec(kind="numeric", answer=1048576, rtol=0)
TWO_THIRDS = NumericSpec(kind="numeric", answer=2 / 3, rtol=1e-3)


@pytest.mark.parametrize(
    "answer",
    [
        "0.67",
        "0.6698",
        "6.698e-1",
        "6.698E-1",
        ".67",
        "67%",
        "０．６７",
        "0.67。",
        "exp(1/sqrt(2))/(exp(1/sqrt(2))+1)",
        "1/(1+exp(-1/√2))",
        "e^(1/sqrt(2))/(e^(1/sqrt(2))+1)",
        r"\frac{e^{1/\sqrt{2}}}{e^{1/\sqrt{2}}+1}",
    ],
)
def test_accepts_within_rtol(answer: str) -> None:
    result = grade_numeric(answer, WEIGHT)
    assert result.correct, result.feedback


@pytest.mark.parametrize("answer", ["0.5", "0.33", "1/(1+exp(1/sqrt(2)))", "0.7", "-0.67", "6.698"])
def test_rejects_realistic_wrong_values(answer: str) -> None:
    result = grade_numeric(answer, WEIGHT)
    assert not result.correct and result.score == 0.0
    assert "0.66" not in result.feedback and "0.67" not in result.feedback


@pytest.mark.parametrize(
    "answer",
    [
        "1048576",
        "1,048,576",
        "1 048 576",
        "1\u2009048\u2009576",
        "1\u202f048\u202f576",
        "1\u00a0048\u00a0576",
        r"1\,048\,576",
        r"$1\,048\,576$",
        "1 048 576。",
        "2^20",
        "2**20",
        "2²⁰",
        "1024*1024",
        "1024×1024",
        "１０４８５７６",
        "2 * 524 288",
    ],
)
def test_exact_integers(answer: str) -> None:
    result = grade_numeric(answer, BIG)
    assert result.correct, result.feedback
    assert result.normalized == "1048576"


@pytest.mark.parametrize("answer", ["1048575", "2^21", "1,048,577", "1000000", "1 048 577"])
def test_exact_integers_reject(answer: str) -> None:
    assert not grade_numeric(answer, BIG).correct


@pytest.mark.parametrize(
    "answer", ["1 048 57", "10 48 576", "1 0485 76", "1048 576", "1 048 576 7", "1 048  576", "1,048 576", "1  048 576"]
)
def test_space_groups_must_be_exactly_three_digits(answer: str) -> None:
    result = grade_numeric(answer, BIG)
    assert not result.correct and result.feedback.startswith("expected a number, got")


def test_space_grouped_decimals() -> None:
    spec = NumericSpec(kind="numeric", answer=12345.5, rtol=0)
    assert grade_numeric("12 345.5", spec).normalized == "12345.5"
    assert not grade_numeric("12 345 .5", spec).correct


@pytest.mark.parametrize("answer", ["2/3", "0.6667", "0.666667", "２／３"])
def test_fractions(answer: str) -> None:
    assert grade_numeric(answer, TWO_THIRDS).correct


def test_normalized_is_the_parsed_value() -> None:
    assert grade_numeric("2/3", TWO_THIRDS).normalized == "0.666666666667"
    assert grade_numeric("6.698e-1", WEIGHT).normalized == "0.6698"


def test_atol() -> None:
    spec = NumericSpec(kind="numeric", answer=0.0, rtol=0, atol=1e-6)
    assert grade_numeric("1e-7", spec).correct
    assert not grade_numeric("1e-5", spec).correct


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ("0.670", True),
        ("0.67", True),  # rounds to 0.670 at 3 figures
        ("0.6698", True),  # more digits that round to the answer
        ("0.66976155", True),
        ("0.669", False),
        ("0.671", False),
        ("0.7", False),
        ("exp(1/sqrt(2))/(exp(1/sqrt(2))+1)", True),
    ],
)
def test_significant_figures(answer: str, ok: bool) -> None:
    spec = NumericSpec(kind="numeric", answer=SIGMOID, sig_figs=3)
    result = grade_numeric(answer, spec)
    assert result.correct is ok
    if not ok:
        assert "significant figures" in result.feedback


@pytest.mark.parametrize("answer", ["abc", "zero point six", "0.6.7", "0.67 0.68", "1,2", "[0.67]", "x+1", "0.67abc"])
def test_garbage_says_a_number_was_expected(answer: str) -> None:
    result = grade_numeric(answer, WEIGHT)
    assert not result.correct and result.feedback.startswith("expected a number, got")


@pytest.mark.parametrize("answer", ["", "   "])
def test_empty(answer: str) -> None:
    assert grade_numeric(answer, WEIGHT).feedback == "no answer given"


@pytest.mark.parametrize(
    "answer",
    [
        "10**100**100",
        "9^9^9",
        "2^(2^(2^(2^(2^2))))",
        "(10^300)^9999",
        "exp(exp(exp(10)))",
        "1e999",
        "1/0",
        "log(-1)",
        "sqrt(-4)",
        "(-8)^(1/3)",
        "(" * 60 + "1" + ")" * 60,
        "-" * 400 + "1",
        "1+" * 300 + "1",
    ],
)
def test_hostile_or_undefined_input_could_not_evaluate(answer: str) -> None:
    result = grade_numeric(answer, WEIGHT)
    assert not result.correct and result.score == 0.0
    assert result.feedback.startswith("could not evaluate this expression")


@pytest.mark.parametrize("answer", ["__import__('os').system('true')", "().__class__", "lambda: 1", "[1][0]", "a.b"])
def test_python_tricks_are_just_not_numbers(answer: str) -> None:
    result = grade_numeric(answer, WEIGHT)
    assert not result.correct and result.feedback.startswith("expected a number")


def test_nan_and_inf_are_never_correct() -> None:
    spec = NumericSpec(kind="numeric", answer=1.0, rtol=1.0)
    for answer in ["nan", "inf", "1e400", "-inf"]:
        assert not grade_numeric(answer, spec).correct
