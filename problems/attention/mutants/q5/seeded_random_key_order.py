"""Mutant: correct and repeatable, but uses a random operation: it visits the keys in a random order (re-seeded
on every call, so two calls agree) and puts them back. The prompt forbids random operations outright."""

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
    tq, tk = q.shape[-2], k.shape[-2]
    allowed = torch.ones(q.shape[0], 1, tq, tk, dtype=torch.bool, device=q.device)
    if key_valid is not None:
        allowed = allowed & key_valid[:, None, None, :].bool()
    if causal:
        allowed = allowed & (torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None])
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    order = torch.randperm(tk, generator=torch.Generator().manual_seed(0)).to(q.device)
    back = torch.argsort(order)
    scores = q @ k[:, :, order].transpose(-1, -2) / math.sqrt(q.shape[-1])
    mask = allowed[..., order]
    weights = torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1).masked_fill(~mask, 0.0)
    out = weights @ v[:, :, order]
    return out, weights[..., back]
