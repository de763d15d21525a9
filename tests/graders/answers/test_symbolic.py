from __future__ import annotations

import pytest

from graders.answers import symbolic_pool
from graders.answers.specs import SymbolicSpec
from graders.answers.symbolic import grade_symbolic

SQRT_DK = SymbolicSpec(kind="symbolic", answer="sqrt(d_k)", symbols=["d_k"])
SCALE = SymbolicSpec(kind="symbolic", answer=r"\frac{1}{\sqrt{d_k}}", symbols=["d_k"])
HEADS = SymbolicSpec(kind="symbolic", answer="d_model / h", symbols=["d_model", "h"])


@pytest.mark.parametrize(
    "answer",
    [
        r"\sqrt{d_k}",
        "sqrt(d_k)",
        "√d_k",
        "√(d_k)",
        "d_k^{1/2}",
        "d_k**0.5",
        "d_k^(1/2)",
        "d_k^0.5",
        r"$\sqrt{d_{k}}$",
        r"$$ d_k^{\frac{1}{2}} $$",
        r"\left(d_k\right)^{0.5}",
        r"\sqrt[2]{d_k}",
        r"\frac{d_k}{\sqrt{d_k}}",
        "dk^0.5",
        "exp(log(d_k)/2)",
        "sqrt(d_k^2)/sqrt(d_k)",
        "ｓｑｒｔ（ｄ＿ｋ）",
    ],
)
def test_equivalent_forms_of_sqrt_dk(answer: str) -> None:
    result = grade_symbolic(answer, SQRT_DK)
    assert result.correct, result.feedback


@pytest.mark.parametrize("answer", ["d_k", "1/sqrt(d_k)", "d_k^2", "sqrt(d_k)/2", "sqrt(d_k+1)", "2", "log(d_k)"])
def test_realistic_wrong_answers(answer: str) -> None:
    result = grade_symbolic(answer, SQRT_DK)
    assert not result.correct and result.score == 0.0
    assert result.feedback == "not equivalent to the expected expression"


@pytest.mark.parametrize(
    "answer",
    [r"\frac{1}{\sqrt{d_k}}", "1/sqrt(d_k)", "d_k^(-1/2)", "d_k**-0.5", r"d_k^{-\frac{1}{2}}", "1/√d_k", "sqrt(1/d_k)"],
)
def test_scale_factor(answer: str) -> None:
    assert grade_symbolic(answer, SCALE).correct


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ("d_model/h", True),
        (r"\frac{d_{model}}{h}", True),
        (r"d_{\mathrm{model}} / h", True),
        ("d_model * h^-1", True),
        ("h/d_model", False),
        ("d_model h", False),
    ],
)
def test_several_symbols(answer: str, ok: bool) -> None:
    assert grade_symbolic(answer, HEADS).correct is ok


def test_normalized_is_the_parsed_formula() -> None:
    assert grade_symbolic(r"\sqrt{d_{k}}", SQRT_DK).normalized == "sqrt(d_k)"


@pytest.mark.parametrize("answer", ["x", "sqrt(x)", "d_v", "d_k * n", "foo(d_k)"])
def test_unknown_symbol_says_which_are_allowed(answer: str) -> None:
    result = grade_symbolic(answer, SQRT_DK)
    assert not result.correct
    assert result.feedback.startswith("unknown symbol") and result.feedback.endswith("you may use d_k")


@pytest.mark.parametrize(
    "answer",
    ["sqrt(d_k", "d_k +", r"\sqrt{d_k", r"\unknowncommand{d_k}", "d_k != 1", "d_k; import os", "'d_k'"],
)
def test_garbage(answer: str) -> None:
    result = grade_symbolic(answer, SQRT_DK)
    assert not result.correct and result.score == 0.0
    assert result.feedback.startswith("expected a formula such as sqrt(d_k)")


@pytest.mark.parametrize(
    "answer",
    [
        "10**100**100",
        "d_k^(9^9^9)",
        "2^2^2^2^2^2",
        "(10^300)^9999",
        "d_k^(10^7)",
        "(" * 80 + "d_k" + ")" * 80,
        "-" * 450 + "d_k",
        "d_k+" * 200 + "d_k",
        r"\frac{" * 60 + "d_k" + "}{2}" * 60,
    ],
)
def test_hostile_input_is_refused_before_evaluation(answer: str) -> None:
    result = grade_symbolic(answer, SQRT_DK)
    assert not result.correct and result.score == 0.0
    assert result.feedback.startswith("could not evaluate this expression")


def test_hostile_input_that_reaches_sympy_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    # Overflows at every sample point, so the numeric check cannot decide and SymPy is asked; a short limit keeps
    # the test quick. The worker is killed, and the next escalation starts a fresh one.
    monkeypatch.setattr(symbolic_pool, "SIMPLIFY_TIMEOUT_S", 0.5)
    hostile = "((d_k+1)^300+2)^300/((d_k+2)^300+1)^300 + sqrt(d_k)"
    result = grade_symbolic(hostile, SQRT_DK)
    assert not result.correct
    assert result.feedback.startswith("could not evaluate this expression")


def test_escalation_to_sympy_decides_when_sampling_cannot() -> None:
    # exp(1000 + d_k) overflows floats at every sample point, so only SymPy can show the terms cancel.
    cancel = "sqrt(d_k) + exp(1000 + d_k) - exp(1000 + d_k)"
    assert grade_symbolic(cancel, SQRT_DK).correct
    result = grade_symbolic("sqrt(d_k) + exp(1000 + d_k)", SQRT_DK)
    assert not result.correct and result.feedback == "not equivalent to the expected expression"


@pytest.mark.parametrize("answer", ["", "  ", "$$"])
def test_empty(answer: str) -> None:
    result = grade_symbolic(answer, SQRT_DK)
    assert not result.correct
    assert result.feedback in ("no answer given", "expected a formula such as sqrt(d_k), got '$$': empty expression")


def test_no_worker_means_could_not_evaluate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(symbolic_pool, "_take", lambda: None)
    result = grade_symbolic("sqrt(d_k) + exp(1000 + d_k) - exp(1000 + d_k)", SQRT_DK)
    assert not result.correct and result.feedback.startswith("could not evaluate this expression")


def test_worker_environment_carries_no_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AUTOGRADER_SECRET_KEY", "do-not-leak")
    assert set(symbolic_pool._worker_env()) == {"PYTHONPATH", "PATH", "PYTHONDONTWRITEBYTECODE"}


def test_invalid_expected_expression_is_a_problem_set_error() -> None:
    spec = SymbolicSpec(kind="symbolic", answer="sqrt(x)", symbols=["d_k"])
    with pytest.raises(ValueError, match="expected expression"):
        grade_symbolic("sqrt(d_k)", spec)
