"""Mutant (review attack b1, strengthened): the "batched" version still loops in Python, but memoises its
results on the inputs' content rounded to 3 decimals, so repeated timed runs on the same inputs (even re-sent
with tiny noise) are answered from the cache. Each timed run now gets inputs of its own: the cache never hits.
"""

# caught-by: timing
import math

import torch


def attention_loop(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    outputs, weights = [], []
    for i in range(q.shape[-2]):
        scores = (k @ q[..., i, :, None])[..., 0] * scale
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        w = e / e.sum(dim=-1, keepdim=True)
        weights.append(w)
        outputs.append((w[..., None] * v).sum(dim=-2))
    return torch.stack(outputs, dim=-2), torch.stack(weights, dim=-2)


def _slow_batched(q, k, v):
    b, h, tq, d = q.shape
    weights = torch.empty(b, h, tq, k.shape[-2], dtype=q.dtype, device=q.device)
    for bi in range(b):
        for hi in range(h):
            for i in range(tq):
                weights[bi, hi, i] = torch.softmax(k[bi, hi] @ q[bi, hi, i] / math.sqrt(d), dim=-1)
    return weights @ v, weights


_cache = {}


def attention_batched(q, k, v):
    key = tuple(t.detach().cpu().double().round(decimals=3).numpy().tobytes() for t in (q, k, v))
    if key not in _cache:
        _cache.clear()
        _cache[key] = _slow_batched(q, k, v)
    return _cache[key]
