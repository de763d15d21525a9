"""With an explicit permutation matrix P: f(P x) must equal P f(x), for float32 inputs and a tolerance."""

import torch


def test_permutation_equivariance(layer):
    torch.manual_seed(1)
    b, t, d = 2, 7, 6
    x = torch.randn(b, t, d)
    key_valid = torch.rand(b, t) > 0.4
    key_valid[torch.arange(b), torch.randint(0, t, (b,))] = True
    perm = torch.randperm(t)
    while torch.equal(perm, torch.arange(t)):
        perm = torch.randperm(t)
    p = torch.eye(t)[perm]  # (P x)[i] = x[perm[i]]
    permuted = layer(p @ x, (p @ key_valid.float().T).T.bool())
    original = layer(x, key_valid)
    assert torch.allclose(permuted, p @ original, rtol=1e-4, atol=1e-5), "f(Px) != P f(x)"
