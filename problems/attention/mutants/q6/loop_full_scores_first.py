"""Mutant: computes the whole score matrix q @ kᵀ before the loop and only loops over its rows for the softmax
and the weighted sum; the prompt says not to compute the whole score matrix outside the loop."""

# caught-by: method
import math

import torch


def attention_loop(q, k, v):
    all_scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    outputs, weights = [], []
    for i in range(q.shape[-2]):
        scores = all_scores[..., i, :]
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        w = e / e.sum(dim=-1, keepdim=True)
        weights.append(w)
        outputs.append((w[..., None] * v).sum(dim=-2))
    return torch.stack(outputs, dim=-2), torch.stack(weights, dim=-2)


def attention_batched(q, k, v):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
