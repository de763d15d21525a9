"""Mutant (review attack c1): answers by the layer's name instead of testing it; the layers used to be defined
under fixed names. A layer is now an opaque proxy of a function that stays on the grader's side, without a name of
its own, so the test raises (AttributeError) on every layer and loses them all."""

# caught-by: equivariance


def test_permutation_equivariance(layer):
    assert layer.__name__ in ("_ag_layer_0", "_ag_layer_2", "_ag_layer_4"), "not equivariant"
