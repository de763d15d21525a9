"""Permute tokens and mask together, un-permute the output, compare with torch.testing.assert_close."""

import torch


def test_permutation_equivariance(layer):
    g = torch.Generator().manual_seed(0)
    b, t, d = 3, 9, 8
    x = torch.randn(b, t, d, generator=g, dtype=torch.float64)
    key_valid = torch.rand(b, t, generator=g) < 0.6
    key_valid[:, 0] = True  # every sample keeps at least one valid position
    for _ in range(3):
        perm = torch.randperm(t, generator=g)
        expected = layer(x, key_valid)[:, perm]
        actual = layer(x[:, perm], key_valid[:, perm])
        torch.testing.assert_close(actual, expected)
