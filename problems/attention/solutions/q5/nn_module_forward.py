"""Honest style: the attention as an nn.Module whose forward does the matrix products; the entry calls it."""

import math

import torch
from torch import nn


class MaskedAttention(nn.Module):
    def forward(self, q, k, v, allowed):
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(q.size(-1))
        weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1).masked_fill(~allowed, 0.0)
        return torch.matmul(weights, v), weights


_ATTENTION = MaskedAttention()


def _check_shapes(q, k, v):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("q, k, v must be 4-D")
    if q.shape[:2] != k.shape[:2] or k.shape[:2] != v.shape[:2] or k.shape[2] != v.shape[2]:
        raise ValueError("batch, heads or key length do not match")
    if q.shape[3] != k.shape[3]:
        raise ValueError("q and k differ in D")


def scaled_attention(q, k, v, key_valid=None, causal=False):
    _check_shapes(q, k, v)
    tq, tk = q.shape[2], k.shape[2]
    allowed = torch.ones(q.shape[0], 1, tq, tk, dtype=torch.bool, device=q.device)
    if key_valid is not None:
        allowed = allowed & key_valid.view(q.shape[0], 1, 1, tk)
    if causal:
        allowed = allowed & torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
    if not bool(allowed.any(dim=-1).all()):
        raise ValueError("some query has no key it may attend")
    return _ATTENTION(q, k, v, allowed)
