"""Instructor source timed by ``StudentProxy.time_reference``: the baselines of the timing checks (not secret).

``time_reference`` loads a source as the module of a fresh jailed child that never loaded student code, while the
student's processes are stopped, and times the function it names exactly as ``time`` times the student's. So
nothing here is ever exported into, or run beside, the submission: a student cannot slow the baseline down by
patching torch or wrapping names in their module. Imports happen at the top of the source, like any module. The
references compute in the input dtype; tests assert they agree with reference.reference_attention.
"""

from __future__ import annotations

REFERENCE_NAME = "reference_attention"

REFERENCE_SOURCE = """
import math

import torch


def reference_attention(q, k, v, key_valid=None, causal=False):
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ValueError("q, k, v must be (B, H, T, D)")
    if q.shape[:2] != k.shape[:2] or k.shape[:3] != v.shape[:3]:
        raise ValueError("batch, head or key axes do not match")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError("q and k must have the same feature size d_k")
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
"""

# q6: the batched style of the same algorithm (no masks), the baseline of attention_batched.
REFERENCE_BATCHED_NAME = "reference_batched"

REFERENCE_BATCHED_SOURCE = """
import math

import torch


def reference_batched(q, k, v):
    weights = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1]), dim=-1)
    return weights @ v, weights
"""
