"""Mutant: a correct test, but the permutation is always the reversal of the tokens, not a random one (the prompt
asks for a random permutation of the token axis). On these layers the reversal happens to be enough."""

# caught-by: method
import torch


def test_permutation_equivariance(layer):
    x = torch.randn(2, 8, 4, dtype=torch.float64)
    key_valid = torch.rand(2, 8) < 0.6
    key_valid[:, 0] = True
    perm = torch.arange(7, -1, -1)
    torch.testing.assert_close(layer(x[:, perm], key_valid[:, perm]), layer(x, key_valid)[:, perm])
