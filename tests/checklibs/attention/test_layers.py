"""q7's layers really are (or are not) permutation-equivariant, and the student's test is judged per layer."""

import secrets

import pytest
import torch

from checklibs.attention.layers import LAYERS, layer_function, make_layers
from checklibs.attention.student_test_judge import layer_checks
from graders.code.checks import ArgumentRejected, CheckFailed, StudentError, TrustedFunction
from tests.checklibs.attention.direct_proxy import DirectProxy


def _equivariant(layer, dtype=torch.float64, d=6) -> bool:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 9, d, generator=g, dtype=torch.float64).to(dtype)
    key_valid = torch.rand(3, 9, generator=g) < 0.6
    key_valid[:, 0] = True
    perm = torch.randperm(9, generator=g)
    atol = 1e-9 if dtype == torch.float64 else 1e-2
    permuted, original = layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm]
    assert permuted.dtype == dtype and permuted.shape == x.shape
    return torch.allclose(permuted.double(), original.double(), atol=atol, rtol=atol)


@pytest.mark.parametrize("spec", LAYERS, ids=[s.key for s in LAYERS])
def test_each_layer_matches_its_label(spec):
    for seed in (0, 1, secrets.randbits(62)):
        assert _equivariant(layer_function(spec.key, seed)) == spec.equivariant


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("spec", LAYERS, ids=[s.key for s in LAYERS])
def test_each_layer_matches_its_label_in_low_precision_and_odd_sizes(spec, dtype):
    assert _equivariant(layer_function(spec.key, 7), dtype) == spec.equivariant
    assert _equivariant(layer_function(spec.key, 7), d=5) == spec.equivariant  # two heads fall back to one


def test_a_layer_is_a_function_of_its_inputs_and_its_seed():
    x = torch.randn(2, 5, 4, dtype=torch.float64)
    for spec in LAYERS:
        same = layer_function(spec.key, 3)
        assert torch.equal(same(x), same(x)) and torch.equal(same(x), layer_function(spec.key, 3)(x))
        assert not torch.allclose(same(x), layer_function(spec.key, 4)(x))


@pytest.mark.parametrize(
    ("args", "kwargs", "type_name"),
    [
        ((), {}, "TypeError"),
        ((torch.ones(1, 2, 3), None, 1), {}, "TypeError"),
        ((torch.ones(1, 2, 3),), {"mask": None}, "TypeError"),
        ((torch.ones(1, 2, 3),), {"x": torch.ones(1, 2, 3)}, "TypeError"),
        (([[1.0]],), {}, "TypeError"),
        ((torch.ones(2, 3),), {}, "TypeError"),
        ((torch.ones(1, 2, 3, dtype=torch.int64),), {}, "TypeError"),
        ((torch.ones(1, 200, 3),), {}, "ValueError"),
        ((torch.ones(1, 0, 3),), {}, "ValueError"),
        ((torch.ones(1, 2, 3), [True, False]), {}, "TypeError"),
        ((torch.ones(1, 2, 3), torch.ones(2, 1, dtype=torch.bool)), {}, "ValueError"),
    ],
)
def test_every_layer_refuses_bad_arguments_alike(args, kwargs, type_name):
    """The refusal depends on the arguments only: it cannot tell the layers apart."""
    refusals = set()
    for spec in LAYERS:
        with pytest.raises(ArgumentRejected) as refused:
            layer_function(spec.key, 0)(*args, **kwargs)
        refusals.add((refused.value.type_name, refused.value.message))
    assert len(refusals) == 1 and refusals.pop()[0] == type_name


def test_every_layer_takes_key_valid_by_keyword_or_not_at_all():
    x = torch.randn(2, 4, 4)
    for spec in LAYERS:
        layer = layer_function(spec.key, 0)
        mask = torch.tensor([[True, True, False, True], [True, False, False, False]])
        assert torch.equal(layer(x, mask), layer(x=x, key_valid=mask))
        assert layer(x).shape == x.shape and layer(x, None).shape == x.shape
        assert torch.equal(layer(x, mask.int()), layer(x, mask))
        assert not layer(x, torch.zeros(2, 4, dtype=torch.bool)).isnan().any()  # no valid key: zeros, not NaN


def test_half_of_the_layers_are_equivariant():
    assert sum(s.equivariant for s in LAYERS) * 2 == len(LAYERS)


def test_a_test_that_never_fails_loses_the_broken_layers(proxy_for):
    proxy = proxy_for("mutants/q7/never_fails.py")
    lost = []
    for check in layer_checks():
        try:
            check(proxy)
        except CheckFailed as err:
            lost.append(check.__autograder_check__.name)
            assert "returned normally" in err.feedback
    assert lost == [f"layer_{i}" for i, s in enumerate(LAYERS) if not s.equivariant]


def test_a_crashing_test_is_told_it_crashed():
    proxy = DirectProxy("def test_permutation_equivariance(layer):\n    layer()\n")
    with pytest.raises(CheckFailed) as failed:
        layer_checks()[0](proxy)
    assert "your test raised an exception" in failed.value.feedback  # a hidden check names no type


def test_every_layer_set_has_fresh_weights():
    first, second = make_layers(LAYERS), make_layers(LAYERS)
    assert set(first) == set(second) == {s.key for s in LAYERS}
    assert all(type(f) is TrustedFunction for f in first.values())
    x = torch.randn(2, 5, 4, dtype=torch.float64)
    for key in first:
        assert not torch.allclose(first[key].fn(x), second[key].fn(x))


class Recorder:
    """A proxy that records what each call of the student's test received, and answers correctly."""

    def __init__(self) -> None:
        self.order: list[bool] = []  # whether each layer received was equivariant
        self.layers: set[int] = set()

    def call(self, name, layer):
        assert type(layer) is TrustedFunction
        self.layers.add(id(layer.fn))
        self.order.append(_equivariant(layer.fn))
        if not self.order[-1]:
            raise StudentError("AssertionError", "not equivariant")


def test_the_call_order_says_nothing_about_the_layer_judged():
    recorder = Recorder()
    checks = layer_checks()
    orders = set()
    for _ in range(3):
        for check in checks:
            recorder.order.clear()
            recorder.layers.clear()
            check(recorder)
            assert len(recorder.layers) == len(LAYERS)  # every layer, every check
            orders.add(tuple(recorder.order))
    assert len(orders) > 1


@pytest.mark.parametrize("mutant", ["counts_its_calls.py", "identifies_layers_by_name.py"])
def test_a_test_that_does_not_test_loses_equivariant_layers(proxy_for, mutant):
    proxy = proxy_for(f"mutants/q7/{mutant}")
    lost = []
    for check in layer_checks():
        try:
            check(proxy)
        except CheckFailed:
            lost.append(check.__autograder_check__.name)
    assert {"layer_2", "layer_4"} <= set(lost)
