"""Mutant: a correct test with a random permutation, but x is a fixed arange ramp instead of a random input (the
prompt asks the test to build random inputs itself)."""

# caught-by: method
import torch


def test_permutation_equivariance(layer):
    x = torch.arange(2 * 8 * 4, dtype=torch.float64).reshape(2, 8, 4).sin()
    key_valid = torch.tensor([[True, False, True, True, False, True, False, True]] * 2)
    perm = torch.randperm(8)
    torch.testing.assert_close(layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm])
