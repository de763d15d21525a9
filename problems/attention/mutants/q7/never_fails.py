"""Mutant: calls the layer but never compares anything, so it passes every layer."""

# caught-by: equivariance
import torch


def test_permutation_equivariance(layer):
    x = torch.randn(2, 5, 4)
    layer(x, torch.ones(2, 5, dtype=torch.bool))
