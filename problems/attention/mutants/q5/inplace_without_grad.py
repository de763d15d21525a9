"""Mutant: scales q in place, but only when q does not require grad, so autograd never refuses it and the
gradient check cannot see it. The caller's q still changes whenever gradients are off; the source shows it."""

# caught-by: method
import math

import torch


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size")
    if q.requires_grad:
        q = q / math.sqrt(q.shape[-1])
    else:
        q.div_(math.sqrt(q.shape[-1]))
    scores = q @ k.transpose(-1, -2)
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_valid is not None:
        allowed &= key_valid[:, None, None, :].bool()
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0.0)
    return weights @ v, weights
