"""Honest style: small helper functions, a large negative fill re-zeroed after softmax, float64 bookkeeping."""

import math

import torch

NEG = -1e30


def validate(q, k, v):
    for name, t in (("q", q), ("k", k), ("v", v)):
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D")
    if q.size(0) != k.size(0) or q.size(1) != k.size(1) or k.size(0) != v.size(0) or k.size(1) != v.size(1):
        raise ValueError("batch or heads differ")
    if k.size(2) != v.size(2):
        raise ValueError("k and v differ in Tk")
    if q.size(3) != k.size(3):
        raise ValueError("q and k differ in D")


def scores(q, k):
    return torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(q.size(-1)))


def mask_of(key_valid, causal, b, tq, tk, device):
    keep = torch.ones(b, 1, tq, tk, dtype=torch.bool, device=device)
    if key_valid is not None:
        keep = keep & key_valid.bool().reshape(b, 1, 1, tk)
    if causal:
        keep = keep & ~torch.triu(torch.ones(tq, tk, dtype=torch.bool, device=device), diagonal=1)
    return keep


def softmax_keys(s, keep):
    s = s.masked_fill(~keep, NEG)
    s = s - s.max(dim=-1, keepdim=True).values
    e = s.exp() * keep
    return e / e.sum(dim=-1, keepdim=True)


def scaled_attention(q, k, v, key_valid=None, causal=False):
    validate(q, k, v)
    keep = mask_of(key_valid, causal, q.size(0), q.size(2), k.size(2), q.device)
    if not keep.any(dim=-1).all():
        raise ValueError("a query row has no valid key")
    w = softmax_keys(scores(q, k), keep)
    return torch.matmul(w, v), w
