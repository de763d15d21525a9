"""Mutant: correct and loop-free, but without matrix products: scores and output by broadcasting element-wise
products over a 5-D tensor and summing, where the prompt asks for matrix multiplication."""

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
    scores = (q[:, :, :, None, :] * k[:, :, None, :, :]).sum(-1) / math.sqrt(q.shape[-1])
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_valid is not None:
        allowed &= key_valid[:, None, None, :].bool()
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0.0)
    return (weights[..., None] * v[:, :, None, :, :]).sum(-2), weights
