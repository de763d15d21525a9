"""Each builder names the mistake behind a known mutant, with evidence and without hidden values."""

import pytest

from graders.code.attention import (
    determinism_check,
    empty_row_check,
    gradient_check,
    masking_check,
    reference_example_check,
    softmax_axis_check,
    stability_check,
    validation_check,
)
from graders.code.checks import CheckFailed
from graders.results import CATEGORIES

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
    (validation_check, "mutants/q5/no_input_validation.py", "instead of ValueError"),
    (stability_check, "mutants/q5/naive_exp_softmax.py", "subtract each row's maximum"),
    (determinism_check, "mutants/q5/inplace_mutation.py", "modified its input(s) q in place"),
    (determinism_check, "mutants/q5/dropout_left_on.py", "two calls with the same inputs gave different"),
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
    assert failed.value.score_fraction == 0.5  # key_valid cases pass, causal ones fail


def test_only_the_visible_check_shows_inputs(proxy_for):
    with pytest.raises(CheckFailed) as failed:
        reference_example_check()(proxy_for("mutants/q5/missing_sqrt_dk.py"))
    assert reference_example_check().__autograder_check__.visibility == "visible"
    assert "V = [[2, 0], [0, 4]]" in failed.value.feedback
    assert softmax_axis_check().__autograder_check__.visibility == "hidden"
