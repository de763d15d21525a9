"""Mutant (review attack a1): scales q in place and patches torch.equal to always answer True, which blinded the
old in-jail mutation probe (it compared the arguments before and after with torch.equal).

Only trusted-side values count now: the gradient check catches the in-place operation through autograd.
"""

# caught-by: gradient
import math

import torch


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size")
    q /= math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-1, -2)
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_valid is not None:
        allowed &= key_valid[:, None, None, :].bool()
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    weights = weights.masked_fill(~allowed, 0.0)
    return weights @ v, weights


torch.equal = lambda *a, **k: True
