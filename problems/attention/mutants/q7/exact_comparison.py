"""Mutant: compares with torch.equal, no tolerance: an equivariant layer differs by rounding after a permutation
(the sums run in another order), so equivariant layers are rejected."""

# caught-by: equivariance
import torch


def test_permutation_equivariance(layer):
    x = torch.randn(3, 9, 8)
    key_valid = torch.rand(3, 9) < 0.6
    key_valid[:, 0] = True
    perm = torch.randperm(9)
    assert torch.equal(layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm]), "not equivariant"
