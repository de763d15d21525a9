"""Honest variant: a module class hierarchy of the file; __init__ stores a helper module, forward calls methods."""

import math

import torch
from torch import nn


class Scores(nn.Module):
    def forward(self, q, k):
        return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])


class Base(nn.Module):
    def mix(self, weights, v):
        return torch.bmm(weights.flatten(0, 1), v.flatten(0, 1)).unflatten(0, weights.shape[:2])


class Attention(Base):
    def __init__(self):
        super().__init__()
        self.scores = Scores()

    @staticmethod
    def allowed(b, tq, tk, key_valid, causal, device):
        keep = torch.ones(b, 1, tq, tk, dtype=torch.bool, device=device)
        if key_valid is not None:
            keep = keep & key_valid[:, None, None, :]
        if causal:
            keep = keep & torch.ones(tq, tk, dtype=torch.bool, device=device).tril()
        return keep

    def forward(self, q, k, v, key_valid, causal):
        keep = self.allowed(q.shape[0], q.shape[2], k.shape[2], key_valid, causal, q.device)
        if not keep.any(-1).all():
            raise ValueError("a query has no allowed key")
        s = self.scores(q, k).masked_fill(~keep, float("-inf"))
        w = torch.softmax(s, -1).masked_fill(~keep, 0.0)
        return self.mix(w.expand(-1, -1, -1, -1).contiguous(), v), w


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("4-D inputs")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or q.shape[-1] != k.shape[-1]:
        raise ValueError("bad shapes")
    return Attention()(q, k, v, key_valid, causal)
