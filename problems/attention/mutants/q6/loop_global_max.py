"""Mutant: the loop version subtracts one maximum over all batches, heads and keys of query i, not each row's.

Stable for B = H = 1 (the old stability case); with several heads whose scores lie ~1e4 apart, the lower head's
row underflows to 0/0 = NaN. Caught by loop_stability's case with B = H = 2.
"""

# caught-by: stability
import math

import torch


def attention_loop(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    outputs, weights = [], []
    for i in range(q.shape[-2]):
        scores = (k @ q[..., i, :, None])[..., 0] * scale  # (B, H, Tk)
        e = torch.exp(scores - scores.max())
        w = e / e.sum(dim=-1, keepdim=True)
        weights.append(w)
        outputs.append((w[..., None] * v).sum(dim=-2))
    return torch.stack(outputs, dim=-2), torch.stack(weights, dim=-2)


def attention_batched(q, k, v):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
