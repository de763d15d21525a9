"""The trusted reference of scaled dot-product attention, computed in float64.

Every check compares the student's tensors against this function (never against another student's or a stored
tensor), so the expected values are recomputed per check from the same seeded inputs.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def allowed_keys(
    batch: int, tq: int, tk: int, key_valid: Tensor | None, causal: bool, *, device: torch.device | None = None
) -> Tensor:
    """Which key each query may attend: a bool tensor of shape (B, 1, Tq, Tk), True = allowed.

    key_valid (B, Tk) masks keys (True = may attend); causal allows key j for query i when j <= i.
    """
    allowed = torch.ones(batch, 1, tq, tk, dtype=torch.bool, device=device)
    if key_valid is not None:
        allowed = allowed & key_valid.to(torch.bool)[:, None, None, :]
    if causal:
        rows = torch.arange(tq, device=device)[:, None]
        cols = torch.arange(tk, device=device)[None, :]
        allowed = allowed & (cols <= rows)
    return allowed


def scaled_scores(q: Tensor, k: Tensor) -> Tensor:
    """S = Q Kᵀ / √d_k, shape (B, H, Tq, Tk)."""
    return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])


def masked_softmax(scores: Tensor, allowed: Tensor) -> Tensor:
    """Softmax over keys restricted to ``allowed``; masked weights are exactly 0 (not merely tiny)."""
    masked = scores.masked_fill(~allowed, float("-inf"))
    return torch.softmax(masked, dim=-1).masked_fill(~allowed, 0.0)


def validate_shapes(q: Tensor, k: Tensor, v: Tensor) -> None:
    """Raise ValueError unless q, k, v are (B, H, T, D) with matching B, H, Tk (k vs v) and D (q vs k)."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size d_k")


def reference_attention(
    q: Tensor, k: Tensor, v: Tensor, key_valid: Tensor | None = None, causal: bool = False
) -> tuple[Tensor, Tensor]:
    """Scaled dot-product attention in float64.

    Args:
        q, k, v: (B, H, Tq, D), (B, H, Tk, D), (B, H, Tk, Dv); any float dtype (computed in float64).
        key_valid: optional (B, Tk) bool, True = the key may be attended.
        causal: allow key j for query i only when j <= i.

    Returns:
        (output (B, H, Tq, Dv), weights (B, H, Tq, Tk)), both float64; differentiable w.r.t. q, k, v.

    Raises:
        ValueError: on bad shapes, or when a query has no allowed key.
    """
    validate_shapes(q, k, v)
    q64, k64, v64 = q.to(torch.float64), k.to(torch.float64), v.to(torch.float64)
    allowed = allowed_keys(q.shape[0], q.shape[2], k.shape[2], key_valid, causal, device=q.device)
    if bool((~allowed.any(dim=-1)).any()):
        raise ValueError("a query has no allowed key")
    weights = masked_softmax(scaled_scores(q64, k64), allowed)
    return weights @ v64, weights
