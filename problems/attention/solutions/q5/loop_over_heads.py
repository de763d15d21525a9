"""An explicit loop over (batch, head) pairs, each head computed with 2-D matrix products."""

import math

import torch


def _one_head(q, k, v, allowed):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(~allowed, float("-inf"))
    scores = scores - scores.max(dim=-1, keepdim=True).values
    e = scores.exp()
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("need (B, H, T, D) tensors")
    b, h, tq, d = q.shape
    if k.shape[0] != b or k.shape[1] != h or k.shape[3] != d:
        raise ValueError("k does not match q")
    if v.shape[:3] != k.shape[:3]:
        raise ValueError("v does not match k")
    tk = k.shape[2]
    outputs, all_weights = [], []
    for bi in range(b):
        allowed = torch.ones(tq, tk, dtype=torch.bool, device=q.device)
        if key_valid is not None:
            allowed = allowed & key_valid[bi].bool()[None, :]
        if causal:
            allowed = allowed & torch.tril(torch.ones(tq, tk, dtype=torch.bool, device=q.device))
        if not allowed.any(dim=-1).all():
            raise ValueError("a query has no valid key")
        heads = [_one_head(q[bi, hi], k[bi, hi], v[bi, hi], allowed) for hi in range(h)]
        outputs.append(torch.stack([o for o, _ in heads]))
        all_weights.append(torch.stack([w for _, w in heads]))
    return torch.stack(outputs), torch.stack(all_weights)
