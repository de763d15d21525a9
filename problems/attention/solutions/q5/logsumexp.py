"""Honest style: weights as exp(s - logsumexp(s)) over the allowed keys, torch.where for the mask."""

import math

import torch


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError("4-D inputs expected")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3] or q.shape[-1] != k.shape[-1]:
        raise ValueError("shapes do not match")
    b, _, tq, d = q.shape
    tk = k.shape[-2]
    ok = torch.ones(b, 1, tq, tk, dtype=torch.bool, device=q.device)
    if key_valid is not None:
        ok = ok & key_valid[:, None, None, :]
    if causal:
        ok = ok & (torch.arange(tk, device=q.device) <= torch.arange(tq, device=q.device)[:, None])
    if not torch.all(ok.any(dim=-1)):
        raise ValueError("no key to attend for some query")
    s = torch.einsum("bhid,bhjd->bhij", q, k) / math.sqrt(d)
    s = s.masked_fill(~ok, float("-inf"))
    w = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
    return torch.einsum("bhij,bhjd->bhid", w, v), w
