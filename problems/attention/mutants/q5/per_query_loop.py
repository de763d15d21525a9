"""Mutant: correct, but loops in Python over the query positions (one query per iteration): the prompt asks for
batch computation with matrix products and no element-wise loops. Loops over batch and heads are allowed."""

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
    b, _, tq, d = q.shape
    tk = k.shape[2]
    allowed = torch.ones(b, 1, tq, tk, dtype=torch.bool, device=q.device)
    if key_valid is not None:
        allowed = allowed & key_valid[:, None, None, :].bool()
    if causal:
        allowed = allowed & torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
    if not bool(allowed.any(dim=-1).all()):
        raise ValueError("a query has no allowed key")
    rows = []
    for i in range(tq):
        scores = (q[:, :, i : i + 1] @ k.transpose(-1, -2))[:, :, 0] / math.sqrt(d)
        rows.append(torch.softmax(scores.masked_fill(~allowed[:, :, i], float("-inf")), dim=-1))
    weights = torch.stack(rows, dim=2).masked_fill(~allowed, 0.0)
    return weights @ v, weights
