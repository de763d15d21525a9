"""einsum for the products and a hand-written stable softmax (subtract the row max over allowed keys)."""

import torch


def _check_shapes(q, k, v):
    if not (q.dim() == k.dim() == v.dim() == 4):
        raise ValueError("expected 4-D tensors (B, H, T, D)")
    (b, h, _, d), (bk, hk, tk, dk), (bv, hv, tv, _) = q.shape, k.shape, v.shape
    if (b, h) != (bk, hk) or (b, h, tk) != (bv, hv, tv) or d != dk:
        raise ValueError("shapes of q, k, v do not match")


def scaled_attention(q, k, v, key_valid=None, causal=False):
    _check_shapes(q, k, v)
    scores = torch.einsum("bhid,bhjd->bhij", q, k) * q.shape[-1] ** -0.5
    tq, tk = scores.shape[-2:]
    allowed = torch.ones(q.shape[0], 1, tq, tk, dtype=torch.bool, device=q.device)
    if key_valid is not None:
        allowed = allowed & key_valid.bool().view(q.shape[0], 1, 1, tk)
    if causal:
        allowed = allowed & torch.ones(tq, tk, dtype=torch.bool, device=q.device).tril()
    if not bool(allowed.any(dim=-1).all()):
        raise ValueError("some query has no key it may attend")
    neg_inf = torch.tensor(float("-inf"), dtype=scores.dtype, device=scores.device)
    masked = torch.where(allowed, scores, neg_inf)
    shifted = masked - masked.amax(dim=-1, keepdim=True)
    e = torch.exp(shifted) * allowed
    weights = e / e.sum(dim=-1, keepdim=True)
    return torch.einsum("bhij,bhjd->bhid", weights, v), weights
