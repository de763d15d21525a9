"""Mutant: correct, but keeps state between calls: results are memoised on the inputs' bytes in a module-level
dict (the same inputs give the same answer, so determinism cannot see it). The prompt forbids keeping state."""

# caught-by: method
import math

import torch

_results = {}


def _attention(q, k, v, key_valid, causal):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_valid is not None:
        allowed &= key_valid[:, None, None, :].bool()
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0.0)
    return weights @ v, weights


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size")
    if q.requires_grad or k.requires_grad or v.requires_grad:
        return _attention(q, k, v, key_valid, causal)
    parts = [t.detach().cpu().numpy().tobytes() for t in (q, k, v)]
    key = (*parts, None if key_valid is None else key_valid.cpu().numpy().tobytes(), causal, str(q.dtype))
    if key not in _results:
        _results[key] = _attention(q, k, v, key_valid, causal)
    out, weights = _results[key]
    return out.clone(), weights.clone()
