"""Mutant (points without work): validates shapes, raises on queries without keys, then returns zeros of the
right shapes. It used to earn 6/20 from validation, empty rows, determinism and equivariance alone; those checks
now pay only when the function computes correct values on a basic case first."""

# caught-by: validation, empty_row, determinism, equivariance
import torch


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size")
    b, h, tq, _ = q.shape
    tk = k.shape[2]
    allowed = torch.ones(b, 1, tq, tk, dtype=torch.bool)
    if key_valid is not None:
        allowed = allowed & key_valid[:, None, None, :].bool()
    if causal:
        allowed = allowed & torch.ones(tq, tk, dtype=torch.bool).tril()
    if not bool(allowed.any(dim=-1).all()):
        raise ValueError("a query has no allowed key")
    return q.new_zeros(b, h, tq, v.shape[-1]), q.new_zeros(b, h, tq, tk)
