"""Mutant: tests correctly but signals a non-equivariant layer with ValueError instead of AssertionError."""

# caught-by: equivariance
import torch


def test_permutation_equivariance(layer):
    x = torch.randn(2, 8, 4, dtype=torch.float64)
    key_valid = torch.rand(2, 8) < 0.6
    key_valid[:, 0] = True
    perm = torch.randperm(8)
    if not torch.allclose(layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm]):
        raise ValueError("not equivariant")
