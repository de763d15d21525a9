"""Mutant: only ever uses an all-True mask, so a layer that misuses the mask by position goes unnoticed."""

# caught-by: equivariance
import torch


def test_permutation_equivariance(layer):
    x = torch.randn(2, 8, 4, dtype=torch.float64)
    key_valid = torch.ones(2, 8, dtype=torch.bool)
    perm = torch.randperm(8)
    torch.testing.assert_close(layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm])
