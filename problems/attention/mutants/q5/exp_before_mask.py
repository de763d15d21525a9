"""Mutant: subtracts each row's maximum over ALL keys, exponentiates, and only then applies the mask.

Exact for moderate scores; when a masked key holds the row's largest score (~1e4 above the others) every allowed
exp underflows to 0 and the weights are 0/0 = NaN. Caught by the stability case whose mask hides the maximum.
"""

# caught-by: stability
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
        allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values) * allowed
    weights = e / e.sum(dim=-1, keepdim=True)
    return weights @ v, weights
