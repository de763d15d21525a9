"""Mutant: answers by counting its calls instead of testing. Each check used to call the test once, on layer_0,
layer_1, ... in order, so calls 1, 3 and 5 were the equivariant layers. Each check now runs the test on every
layer in a random order, so from the seventh call on it rejects everything, equivariant layers included."""

# caught-by: equivariance
_calls = [0]


def test_permutation_equivariance(layer):
    _calls[0] += 1
    assert _calls[0] in (1, 3, 5), "not equivariant"
