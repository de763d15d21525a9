"""Mutant: the causal triangle aligned to the bottom-right (j <= i + Tk - Tq, as when decoding with a KV cache).

Identical to the right mask when Tq = Tk; the prompt defines causal as j <= i for any Tq and Tk, so the masking
cases with Tq != Tk catch it (and the empty-row case where query 0 of a wide causal case has no key).
"""

# caught-by: masking
import math

import torch


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
        allowed &= torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril(diagonal=tk - tq)
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    weights = weights.masked_fill(~allowed, 0.0)
    return weights @ v, weights
