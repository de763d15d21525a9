"""Mutant: rejects every layer."""

# caught-by: equivariance


def test_permutation_equivariance(layer):
    raise AssertionError("not equivariant")
