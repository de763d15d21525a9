"""Mutant: a real per-query loop, but its weights come from torch.softmax, which the prompt forbids in the loop
version (write the stable softmax by hand)."""

# caught-by: method
import math

import torch


def attention_loop(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    outputs, weights = [], []
    for i in range(q.shape[-2]):
        scores = (k @ q[..., i, :, None])[..., 0] * scale
        w = torch.softmax(scores, dim=-1)
        weights.append(w)
        outputs.append((w[..., None] * v).sum(dim=-2))
    return torch.stack(outputs, dim=-2), torch.stack(weights, dim=-2)


def attention_batched(q, k, v):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
