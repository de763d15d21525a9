"""Mutant: the causal mask built Tq×Tq, then cut or padded (keys beyond Tq left allowed) to Tk columns.

Right whenever Tq >= Tk (the cut triangle is the top-left one) and for self-attention; with Tq < Tk every query
sees the keys j >= Tq, which lie in its future. Caught by the masking case with Tq < Tk.
"""

# caught-by: masking
import math

import torch
import torch.nn.functional as F


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size")
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_valid is not None:
        allowed &= key_valid[:, None, None, :].bool()
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        square = torch.tril(torch.ones(tq, tq, dtype=torch.bool, device=q.device))
        allowed &= square[:, :tk] if tk <= tq else F.pad(square, (0, tk - tq), value=True)
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    weights = weights.masked_fill(~allowed, 0.0)
    return weights @ v, weights
