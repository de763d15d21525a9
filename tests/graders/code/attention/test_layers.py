"""q7's layers really are (or are not) permutation-equivariant, and the student's test is judged per layer."""

import pytest
import torch

from graders.code.attention.equivariance_test import layer_checks
from graders.code.attention.layers import LAYERS, LAYERS_SOURCE
from graders.code.checks import CheckFailed
from tests.graders.code.attention.direct_proxy import DirectProxy


def _equivariant(layer) -> bool:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 9, 6, generator=g, dtype=torch.float64)
    key_valid = torch.rand(3, 9, generator=g) < 0.6
    key_valid[:, 0] = True
    perm = torch.randperm(9, generator=g)
    return torch.allclose(layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm], atol=1e-9)


@pytest.mark.parametrize("spec", LAYERS, ids=[s.name for s in LAYERS])
def test_each_layer_matches_its_label(spec):
    helpers: dict = {}
    exec(LAYERS_SOURCE, helpers)
    assert _equivariant(helpers[spec.name]) == spec.equivariant


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
