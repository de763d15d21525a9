"""Honest variant: computes in float64 whatever the input dtype and casts the results back to it."""

import math

import torch
import torch.nn.functional as F


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if any(t.ndim != 4 for t in (q, k, v)):
        raise ValueError("expected (B, H, T, D) tensors")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or q.shape[-1] != k.shape[-1]:
        raise ValueError("shapes do not match")
    dtype = q.dtype
    q64, k64, v64 = q.double(), k.double(), v.double()
    s = q64 @ k64.transpose(-2, -1) / math.sqrt(q.shape[-1])
    tq, tk = s.shape[-2:]
    allowed = torch.ones(tq, tk, dtype=torch.bool, device=q.device).expand(q.shape[0], 1, tq, tk)
    if key_valid is not None:
        allowed = allowed & key_valid.view(-1, 1, 1, tk)
    if causal:
        allowed = allowed & torch.tril(torch.ones(tq, tk, dtype=torch.bool, device=q.device))
    if (allowed.sum(-1) == 0).any():
        raise ValueError("a query has no key")
    w = F.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0)
    return (w @ v64).to(dtype), w.to(dtype)
