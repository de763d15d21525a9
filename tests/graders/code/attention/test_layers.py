"""q7's layers really are (or are not) permutation-equivariant, and the student's test is judged per layer."""

import pytest
import torch

from graders.code.attention.layers import LAYERS, define_layers, layers_source
from graders.code.attention.student_test_judge import layer_checks
from graders.code.checks import CheckFailed, StudentError
from tests.graders.code.attention.direct_proxy import DirectProxy


def _equivariant(layer) -> bool:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 9, 6, generator=g, dtype=torch.float64)
    key_valid = torch.rand(3, 9, generator=g) < 0.6
    key_valid[:, 0] = True
    perm = torch.randperm(9, generator=g)
    return torch.allclose(layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm], atol=1e-9)


@pytest.mark.parametrize("spec", LAYERS, ids=[s.key for s in LAYERS])
def test_each_layer_matches_its_label(spec):
    helpers: dict = {}
    exec(layers_source({spec.key: "layer"}), helpers)
    assert _equivariant(helpers["layer"]) == spec.equivariant


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
    assert "raised TypeError" in failed.value.feedback


def test_layers_get_fresh_random_names_that_say_nothing():
    first_source, first = define_layers(LAYERS)
    _, second = define_layers(LAYERS)
    assert set(first) == set(second) == {s.key for s in LAYERS}
    assert not set(first.values()) & set(second.values())
    helpers: dict = {}
    exec(first_source, helpers)
    for name in first.values():
        layer = helpers[name]
        assert layer.__name__ == layer.__qualname__ == layer.__code__.co_name == name
        assert name.startswith("f") and len(name) == 17
    assert "_ag_layer" not in first_source


class Recorder:
    """A proxy that records which layer each call of the student's test received, and answers correctly."""

    def __init__(self) -> None:
        self.helpers: dict = {}
        self.order: list[str] = []

    def define(self, source: str) -> None:
        exec(source, self.helpers)

    def call(self, name, ref):
        self.order.append(ref.name)
        layer = self.helpers[ref.name]
        if not _equivariant(layer):
            raise StudentError("AssertionError", "not equivariant")


def test_the_call_order_says_nothing_about_the_layer_judged():
    recorder = Recorder()
    checks = layer_checks()
    positions = set()
    for _ in range(3):
        for check in checks:
            recorder.order.clear()
            check(recorder)
            assert len(recorder.order) == len(LAYERS)  # every layer, every check
            positions.add(tuple(recorder.order))
    assert len(positions) > 1


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
