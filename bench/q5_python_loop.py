"""A correct q5 answer that loops over query positions in Python (vectorised over batch, heads and keys).

Not a shipped solution: bench_timing_stability grades it as the "slow Python loop" whose timing verdict must be
the same every time (about 4-8× the reference at the timing sizes: half of the timing points).
"""

import math

import torch


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or q.shape[-1] != k.shape[-1]:
        raise ValueError("batch, head, key or feature axes do not match")
    tk = k.shape[-2]
    scale = 1.0 / math.sqrt(q.shape[-1])
    outputs, weights = [], []
    for i in range(q.shape[-2]):
        scores = (k @ q[..., i, :, None])[..., 0] * scale  # (B, H, Tk): query i against every key
        allowed = torch.ones_like(scores, dtype=torch.bool)
        if key_valid is not None:
            allowed = allowed & key_valid[:, None, :].bool()
        if causal:
            allowed = allowed & (torch.arange(tk, device=q.device) <= i)
        if not bool(allowed.any(dim=-1).all()):
            raise ValueError("a query has no allowed key")
        scores = scores.masked_fill(~allowed, float("-inf"))
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        w = e / e.sum(dim=-1, keepdim=True)
        weights.append(w)
        outputs.append((w[..., None] * v).sum(dim=-2))
    return torch.stack(outputs, dim=-2), torch.stack(weights, dim=-2)
