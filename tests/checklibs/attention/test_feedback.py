"""Each builder names the mistake behind a known mutant, with evidence and without hidden values."""

import re

import pytest
import torch

from checklibs.attention import (
    determinism_check,
    empty_row_check,
    gradient_check,
    masking_check,
    reference_example_check,
    softmax_axis_check,
    stability_check,
    timing_check,
    validation_check,
)
from checklibs.attention.calling import student_message
from checklibs.attention.compare import compare
from checklibs.attention.inputs import random_case
from checklibs.attention.loop_vs_batched import agreement_check
from checklibs.attention.masking import masked_weight_problem, row_sum_problem
from graders.code.checks import CheckFailed, StudentError
from graders.code.sanitise import HIDDEN_NOTE, VISIBLE_MESSAGE_CHARS, exception_name, raised, sanitise
from graders.results import CATEGORIES
from tests.checklibs.attention.direct_proxy import DirectProxy

CASES = [
    (softmax_axis_check, "mutants/q5/wrong_softmax_axis.py", "columns sum to 1 instead of rows"),
    (softmax_axis_check, "mutants/q5/weights_transposed.py", "weights are transposed"),
    (masking_check, "mutants/q5/inverted_mask.py", "opposite of key_padding_mask"),
    (masking_check, "mutants/q5/mask_on_query_axis.py", "query axis"),
    (masking_check, "mutants/q5/causal_wrong_triangle.py", "wrong triangle"),
    (masking_check, "mutants/q5/causal_strict.py", "j <= i includes the diagonal"),
    (masking_check, "mutants/q5/masked_weights_not_zero.py", "must be exactly 0"),
    (reference_example_check, "mutants/q5/missing_sqrt_dk.py", "without the 1/√d_k scaling"),
    (gradient_check, "mutants/q5/detached_gradients.py", "no gradient reached k: did you detach or go through numpy?"),
    (gradient_check, "mutants/q5/numpy_round_trip.py", "no gradient reached q"),
    (gradient_check, "mutants/q5/float32_cast.py", "output is float32; keep the input dtype"),
    (gradient_check, "mutants/q5/scale_by_dv.py", "max rel error"),
    (empty_row_check, "mutants/q5/nan_instead_of_valueerror.py", "returned NaN weights instead of raising ValueError"),
    (validation_check, "mutants/q5/no_input_validation.py", "other than ValueError"),
    (stability_check, "mutants/q5/naive_exp_softmax.py", "subtract each row's maximum"),
    (gradient_check, "mutants/q5/inplace_mutation.py", "your function modifies its inputs in place"),
    (gradient_check, "mutants/q5/inplace_hidden_from_probe.py", "your function modifies its inputs in place"),
    (determinism_check, "mutants/q5/dropout_left_on.py", "two calls with the same inputs gave different"),
    (masking_check, "mutants/q5/causal_bottom_right.py", "aligned to the bottom-right"),
    (masking_check, "mutants/q5/causal_square_mask.py", "weights on masked keys must be exactly 0"),
    (empty_row_check, "mutants/q5/causal_bottom_right.py", "causal, Tq=3, Tk=6, key 0 invalid"),
    (gradient_check, "mutants/q5/causal_square_mask.py", "causal, Tq=3, Tk=5"),
    (stability_check, "mutants/q5/exp_before_mask.py", "over the allowed keys only"),
    (stability_check, "mutants/q5/renormalised_softmax.py", "a masked key may hold the row's largest score"),
]


@pytest.mark.parametrize(("builder", "mutant", "phrase"), CASES, ids=[c[1].split("/")[-1] for c in CASES])
def test_the_mutant_fails_with_a_named_reason(proxy_for, builder, mutant, phrase):
    check = builder()
    with pytest.raises(CheckFailed) as failed:
        check(proxy_for(mutant))
    assert phrase in failed.value.feedback
    assert failed.value.score_fraction < 1.0
    assert "tensor(" not in failed.value.feedback  # no raw tensors (hidden inputs or expected values)


@pytest.mark.parametrize(
    "builder",
    [
        determinism_check,
        empty_row_check,
        gradient_check,
        masking_check,
        reference_example_check,
        softmax_axis_check,
        stability_check,
        validation_check,
    ],
)
def test_a_correct_solution_passes_and_the_category_is_fixed(proxy_for, builder):
    check = builder(points=3)
    spec = check.__autograder_check__
    assert spec.category in CATEGORIES and spec.points == 3
    assert builder(name="other").__autograder_check__.category == spec.category
    assert isinstance(check(proxy_for("solutions/q5/masked_fill.py")), str)


def test_partial_credit_counts_the_cases_that_passed(proxy_for):
    with pytest.raises(CheckFailed) as failed:
        masking_check()(proxy_for("mutants/q5/causal_wrong_triangle.py"))
    assert failed.value.score_fraction == 2 / 7  # the 2 key_valid cases pass, the 5 causal ones fail


def test_only_the_visible_check_shows_inputs(proxy_for):
    with pytest.raises(CheckFailed) as failed:
        reference_example_check()(proxy_for("mutants/q5/missing_sqrt_dk.py"))
    assert reference_example_check().__autograder_check__.visibility == "visible"
    assert "V = [[2, 0], [0, 4]]" in failed.value.feedback
    assert softmax_axis_check().__autograder_check__.visibility == "hidden"


# The review's g1: every call raises with the hidden inputs in its message (RuntimeError, so that the checks
# expecting a ValueError fail too).
EXFILTRATE = """
def scaled_attention(q, k, v, key_valid=None, causal=False):
    kv = None if key_valid is None else key_valid.tolist()
    raise RuntimeError("LEAK q=" + repr(q.flatten().tolist()) + " kv=" + repr(kv))
"""

HIDDEN_BUILDERS = [
    determinism_check,
    empty_row_check,
    gradient_check,
    masking_check,
    softmax_axis_check,
    stability_check,
    validation_check,
]


def _decimal_runs(text: str) -> list[str]:
    return re.findall(r"-?\d*\.\d+(?:[,\s\[\]]+-?\d*\.\d+){2,}", text)


@pytest.mark.parametrize("builder", HIDDEN_BUILDERS, ids=[b.__name__ for b in HIDDEN_BUILDERS])
def test_hidden_checks_do_not_echo_hidden_inputs_raised_by_the_student(builder):
    proxy = DirectProxy(EXFILTRATE)
    with pytest.raises(CheckFailed) as failed:
        builder()(proxy)
    feedback = failed.value.feedback
    for line in feedback.splitlines():
        assert len(line) < 400, line
    assert not _decimal_runs(feedback), feedback
    assert "True, False" not in feedback and "False, True" not in feedback
    values = random_case("key_valid", 21, tq=6, tk=6, masked=True).q.flatten().tolist()
    assert not any(f"{x!r}"[:8] in feedback for x in values)


def test_a_visible_check_may_show_more_of_the_message():
    proxy = DirectProxy(EXFILTRATE)
    with pytest.raises(CheckFailed) as failed:
        reference_example_check()(proxy)
    assert "LEAK q=[1.0, 0.0" in failed.value.feedback  # the 2×2 example's inputs are public
    assert len(failed.value.feedback) < VISIBLE_MESSAGE_CHARS + 200


def test_hidden_feedback_is_trusted_text_only():
    q = torch.randn(2, 2, 5, 4, dtype=torch.float64)
    message = f"LEAK q={q.flatten().tolist()!r} (line 4, in f)"
    assert sanitise(message, visible=False) == ""  # no student text at all, whatever it encodes
    assert raised("ValueError", message, visible=False) == f"an exception ({HIDDEN_NOTE})"
    # Neither a class named after a hidden value nor the choice of builtin is repeated (that is ~5.7 bits).
    assert raised("q0=1.7512,0.1528", "x", visible=False) == f"an exception ({HIDDEN_NOTE})"
    assert exception_name("KeyError", visible=False) == "an exception"
    assert exception_name("MyError", visible=True) == "MyError"
    assert raised("ValueError", "  shapes   differ ", visible=True) == "ValueError: shapes differ"
    assert len(sanitise("word " * 200, visible=True)) == VISIBLE_MESSAGE_CHARS


def test_hidden_comparisons_show_orders_of_magnitude_not_values():
    expected = torch.zeros(2, 3, dtype=torch.float64)
    garbage = torch.tensor([[0.0, 1.7512, 0.0], [0.0, 0.0, 0.1528]], dtype=torch.float64)
    hidden = compare(garbage, expected, rtol=1e-7, atol=1e-9, what="weights")
    shown = compare(garbage, expected, rtol=1e-7, atol=1e-9, what="weights", visible=True)
    assert hidden is not None and shown is not None
    assert "1.75" not in hidden and "index" not in hidden and "of order 1e+00" in hidden
    assert "1.75" in shown and "worst at index (0, 1)" in shown
    wrong_shape = compare(torch.zeros(17, 31), expected, rtol=1e-7, atol=1e-9, what="weights")
    assert wrong_shape is not None and "17" not in wrong_shape and "(2, 3)" in wrong_shape
    nan = compare(torch.full((2, 3), float("nan")), expected, rtol=1e-7, atol=1e-9, what="weights")
    assert nan == "weights contains NaN"


def test_an_in_place_error_from_autograd_is_named():
    err = StudentError(
        "RuntimeError",
        "a leaf Variable that requires grad is being used in an in-place operation. (line 16, in scaled_attention)",
    )
    text = student_message(err, visible=False)
    assert text.startswith("an exception from autograd: your function modifies its inputs in place")
    assert "q /= s" in text


def test_timing_feedback_does_not_depend_on_a_reference_beside_the_student(proxy_for):
    # timing_session runs the baseline from instructor source, as a module of its own. The ratio is measured, so
    # only the feedback's form is asserted, never the score.
    try:
        feedback = timing_check(sizes=(16,))(proxy_for("solutions/q5/masked_fill.py"))
    except CheckFailed as failed:
        feedback = failed.feedback
    assert "reference ms" in feedback and re.search(r"all \d+ results were checked", feedback)


def test_hidden_mask_reports_name_no_count_index_or_exact_weight():
    allowed = torch.tensor([[True, False, False]])
    weights = torch.tensor([[0.5, 0.1752, 0.3248]], dtype=torch.float64)  # values the student's code chose
    hidden = masked_weight_problem(weights, allowed) or ""
    assert "0.175" not in hidden and "index" not in hidden and "2 are not" not in hidden and "of order 1e-01" in hidden
    assert "index (0, 1)" in (masked_weight_problem(weights, allowed, visible=True) or "")
    assert "row" in (row_sum_problem(weights * 2) or "") and "(0,)" not in (row_sum_problem(weights * 2) or "")


DISAGREE = """
import torch

def attention_batched(q, k, v):
    w = torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1)
    return w @ v, w

def attention_loop(q, k, v):
    out, w = attention_batched(q, k, v)
    return out + q[..., :1] * 1000, w  # off by an amount the hidden q decides
"""


def test_hidden_agreement_feedback_quotes_no_difference_or_index():
    with pytest.raises(CheckFailed) as failed:
        agreement_check(basic=False)(DirectProxy(DISAGREE))
    feedback = failed.value.feedback
    assert "disagree on the output" in feedback and "of order" in feedback
    assert "Greatest" not in feedback and "index" not in feedback, feedback
