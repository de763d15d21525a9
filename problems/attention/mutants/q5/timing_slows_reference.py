"""Mutant (review attack a4): slow at the timing sizes, and slows down any reference timed beside it.

It burns 50 ms of CPU per call once T >= 32 (so the rest of the grading stays fast), makes torch.softmax and
matmul sleep for every caller but itself, and wraps anything exported into its module (the old in-jail reference)
in the same sleep. Against a reference timed in the jail the ratio stayed ~1; the reference is now timed in a
clean process that never loaded this code, so the 50 ms shows. It is work, not a sleep: a timing check counts the
CPU time of the call, and a sleep would neither earn nor lose a point.
"""

# caught-by: timing
import sys
import time
import types

import torch

_softmax, _matmul = torch.softmax, torch.Tensor.__matmul__
_mine = [False]


def _slow(fn):
    def wrapper(*a, **k):
        if not _mine[0]:
            time.sleep(0.05)
        return fn(*a, **k)

    return wrapper


def _burn(seconds):
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def scaled_attention(q, k, v, key_valid=None, causal=False):
    _mine[0] = True
    try:
        if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
            raise ValueError("q, k, v must be (B, H, T, D)")
        if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
            raise ValueError("batch, head or key axes do not match")
        if q.shape[-1] != k.shape[-1]:
            raise ValueError("q and k must have the same feature size")
        if q.shape[-2] >= 32:
            _burn(0.05)
        scores = _matmul(q, k.transpose(-1, -2)) / q.shape[-1] ** 0.5
        allowed = torch.ones_like(scores, dtype=torch.bool)
        if key_valid is not None:
            allowed &= key_valid[:, None, None, :].bool()
        if causal:
            tq, tk = q.shape[-2], k.shape[-2]
            allowed &= torch.arange(tk, device=q.device)[None, :] <= torch.arange(tq, device=q.device)[:, None]
        if torch.any(~allowed.any(dim=-1)):
            raise ValueError("a query has no allowed key")
        weights = _softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0.0)
        return _matmul(weights, v), weights
    finally:
        _mine[0] = False


torch.softmax = _slow(_softmax)
torch.Tensor.__matmul__ = _slow(_matmul)


class _Guard(types.ModuleType):
    def __setattr__(self, name, value):
        if callable(value) and name != "scaled_attention":
            value = _slow(value)
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Guard
