"""Honest style: attention for one (Tq, D) x (Tk, D) pair written once and mapped over batch and heads by torch.vmap."""

import math

import torch


def _one_head(q, k, v, allowed):
    s = q @ k.T / math.sqrt(q.shape[-1])
    s = torch.where(allowed, s, torch.tensor(float("-inf"), dtype=s.dtype))
    w = torch.softmax(s, dim=-1)
    w = torch.where(allowed, w, torch.zeros((), dtype=w.dtype))
    return w @ v, w


_over_heads = torch.vmap(_one_head, in_dims=(0, 0, 0, None))
_over_batch = torch.vmap(_over_heads, in_dims=(0, 0, 0, 0))


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be 4-D")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or q.shape[3] != k.shape[3]:
        raise ValueError("mismatched shapes")
    b, _, tq, _ = q.shape
    tk = k.shape[2]
    allowed = torch.ones(b, tq, tk, dtype=torch.bool)
    if key_valid is not None:
        allowed = allowed & key_valid[:, None, :]
    if causal:
        allowed = allowed & torch.tril(torch.ones(tq, tk, dtype=torch.bool))
    if not allowed.any(dim=-1).all():
        raise ValueError("a query has no allowed key")
    return _over_batch(q, k, v, allowed)
