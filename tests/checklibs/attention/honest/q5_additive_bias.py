"""Honest variant: an additive float bias built from a COPY of the mask (key_valid.to(q.dtype)), written in place.

The in-place writes change the new float tensor, not the caller's bool mask: the source rule must accept them.
"""

import math

import torch


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("4-D inputs")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or q.shape[3] != k.shape[3]:
        raise ValueError("bad shapes")
    b, _, tq, d = q.shape
    tk = k.shape[2]
    bias = torch.zeros(b, 1, tq, tk, dtype=q.dtype, device=q.device)
    if key_valid is not None:
        keys = key_valid.to(q.dtype)
        keys[keys == 0] = float("-inf")
        keys[keys == 1] = 0.0
        bias = bias + keys[:, None, None, :]
    if causal:
        bias = bias + torch.triu(torch.full((tq, tk), float("-inf"), dtype=q.dtype, device=q.device), diagonal=1)
    if torch.isinf(bias).all(dim=-1).any():
        raise ValueError("a query has no allowed key")
    scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
    weights = torch.softmax(scores, dim=-1)
    weights = torch.where(torch.isinf(bias), torch.zeros_like(weights), weights)
    return weights @ v, weights
