"""Mutant: permutes x but passes the original key_valid, so correct masked layers look non-equivariant."""

# caught-by: equivariance
import torch


def test_permutation_equivariance(layer):
    x = torch.randn(2, 8, 4, dtype=torch.float64)
    key_valid = torch.rand(2, 8) < 0.6
    key_valid[:, 0] = True
    perm = torch.randperm(8)
    torch.testing.assert_close(layer(x[:, perm], key_valid), layer(x, key_valid)[:, perm])
