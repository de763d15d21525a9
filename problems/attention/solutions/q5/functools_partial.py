"""Honest style: the products through functools.partial of torch.matmul / einsum, and a static method."""

import functools
import math

import torch

scores_of = functools.partial(torch.einsum, "bhqd,bhkd->bhqk")
mix = functools.partial(torch.matmul)


class Masks:
    @staticmethod
    def build(batch, tq, tk, key_valid, causal, device):
        allowed = torch.ones(batch, 1, tq, tk, dtype=torch.bool, device=device)
        if key_valid is not None:
            allowed = allowed & key_valid[:, None, None, :]
        if causal:
            i = torch.arange(tq, device=device)[:, None]
            j = torch.arange(tk, device=device)[None, :]
            allowed = allowed & (j <= i)
        return allowed


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if not (q.ndim == k.ndim == v.ndim == 4):
        raise ValueError("expected 4-D q, k, v")
    if q.shape[:2] != k.shape[:2] or v.shape[:3] != k.shape[:3] or q.shape[-1] != k.shape[-1]:
        raise ValueError("shapes do not match")
    allowed = Masks.build(q.shape[0], q.shape[2], k.shape[2], key_valid, causal, q.device)
    if (~allowed.any(-1)).any():
        raise ValueError("empty row")
    s = scores_of(q, k) / math.sqrt(q.shape[-1])
    s = s.masked_fill(~allowed, -math.inf)
    w = torch.exp(s - s.amax(dim=-1, keepdim=True))
    w = w / w.sum(dim=-1, keepdim=True)
    return mix(w, v), w
