"""Mutant: turns the caller's key_valid into a padding mask in place through an alias.

``key_valid.bool()`` returns key_valid itself when it is already bool, so ``logical_not_`` flips the caller's
mask: the results are right, but the caller's tensor has changed (the prompt: do not modify inputs in place). A
bool mask never requires grad, so autograd cannot see it; the source rule follows the alias.
"""

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
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    blocked = torch.zeros_like(scores, dtype=torch.bool)
    if key_valid is not None:
        padding = key_valid.bool()
        padding.logical_not_()  # True = masked, as in key_padding_mask
        blocked |= padding[:, None, None, :]
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        blocked |= torch.arange(tk, device=q.device)[None, :] > torch.arange(tq, device=q.device)[:, None]
    if torch.any(blocked.all(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(blocked, float("-inf")), dim=-1)
    weights = weights.masked_fill(blocked, 0.0)
    return weights @ v, weights
