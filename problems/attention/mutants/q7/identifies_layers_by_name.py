"""Mutant (review attack c1): answers by the layer's name instead of testing it; the layers used to be defined
under fixed names. Their names are now random per definition, so every layer is rejected."""

# caught-by: equivariance


def test_permutation_equivariance(layer):
    assert layer.__name__ in ("_ag_layer_0", "_ag_layer_2", "_ag_layer_4"), "not equivariant"
