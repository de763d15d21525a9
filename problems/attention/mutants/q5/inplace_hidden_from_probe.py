"""Mutant (review attacks a2, a3): scales q in place, but not when the old in-jail mutation probe is the caller
(found on the stack), and refuses to let that probe be exported into its module (a module __class__ whose
__setattr__ drops it).

Only trusted-side values count now: the probe is gone and the gradient check catches the in-place operation.
"""

# caught-by: gradient
import math
import sys
import types

import torch


def scaled_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size")
    if sys._getframe(1).f_code.co_name != "_ag_mutation_probe":
        q /= math.sqrt(q.shape[-1])  # in place, except when the old in-jail probe was the caller
    else:
        q = q / math.sqrt(q.shape[-1])
    scores = q @ k.transpose(-1, -2)
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if key_valid is not None:
        allowed &= key_valid[:, None, None, :].bool()
    if causal:
        tq, tk = q.shape[-2], k.shape[-2]
        allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
    if torch.any(~allowed.any(dim=-1)):
        raise ValueError("a query has no allowed key")
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1)
    weights = weights.masked_fill(~allowed, 0.0)
    return weights @ v, weights


class _Guard(types.ModuleType):
    def __setattr__(self, name, value):
        if name == "_ag_mutation_probe":
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Guard
