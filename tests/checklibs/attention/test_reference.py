import pytest
import torch

from checklibs.attention.inputs import example_2x2, large_score_case, random_case
from checklibs.attention.jail_sources import (
    REFERENCE_BATCHED_NAME,
    REFERENCE_BATCHED_SOURCE,
    REFERENCE_NAME,
    REFERENCE_SOURCE,
)
from checklibs.attention.reference import reference_attention


def test_the_seed_example():
    case = example_2x2()
    out, weights = reference_attention(case.q, case.k, case.v)
    expected_w = torch.tensor([[0.66976155, 0.33023845], [0.33023845, 0.66976155]], dtype=torch.float64)
    expected_out = torch.tensor([[1.3395231, 1.3209538], [0.6604769, 2.6790462]], dtype=torch.float64)
    torch.testing.assert_close(weights[0, 0], expected_w, rtol=0, atol=1e-7)
    torch.testing.assert_close(out[0, 0], expected_out, rtol=0, atol=1e-7)


def test_masked_weights_are_exactly_zero_and_rows_sum_to_one():
    case = random_case("both", 3, tq=6, tk=6, masked=True, causal=True)
    _, weights = reference_attention(case.q, case.k, case.v, case.key_valid, case.causal)
    assert case.key_valid is not None
    allowed = case.key_valid[:, None, None, :] & torch.ones(6, 6, dtype=torch.bool).tril()
    assert bool((weights[~allowed.expand_as(weights)] == 0).all())
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1], dtype=torch.float64))


@pytest.mark.parametrize(
    ("q", "k", "v"),
    [((2, 5, 4), (2, 2, 5, 4), (2, 2, 5, 3)), ((2, 2, 5, 4), (2, 2, 5, 3), (2, 2, 5, 3))],
)
def test_bad_shapes_raise_value_error(q, k, v):
    with pytest.raises(ValueError):
        reference_attention(torch.zeros(q), torch.zeros(k), torch.zeros(v))


def test_a_query_without_keys_raises_value_error():
    case = random_case("empty", 4, masked=True)
    assert case.key_valid is not None
    key_valid = case.key_valid.clone()
    key_valid[0] = False
    with pytest.raises(ValueError):
        reference_attention(case.q, case.k, case.v, key_valid)


def test_large_scores_give_exact_one_hot_or_half_weights():
    for dtype in (torch.float32, torch.float64):
        case = large_score_case(dtype)
        _, weights = reference_attention(case.q, case.k, case.v)
        assert set(weights.flatten().tolist()) <= {0.0, 0.5, 1.0}


def test_the_timed_references_agree_with_the_trusted_one():
    namespace: dict = {}
    exec(REFERENCE_SOURCE, namespace)
    exec(REFERENCE_BATCHED_SOURCE, namespace)
    for case in (random_case("a", 5, masked=True), random_case("b", 6, tq=3, tk=7, masked=True, causal=True)):
        out, weights = namespace[REFERENCE_NAME](*case.args, **case.kwargs)
        ref_out, ref_w = reference_attention(case.q, case.k, case.v, case.key_valid, case.causal)
        torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(weights, ref_w, rtol=1e-12, atol=1e-12)
    case = random_case("c", 7, tq=3, tk=7)
    out, weights = namespace[REFERENCE_BATCHED_NAME](case.q, case.k, case.v)
    ref_out, ref_w = reference_attention(case.q, case.k, case.v)
    torch.testing.assert_close(out, ref_out, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(weights, ref_w, rtol=1e-12, atol=1e-12)
