"""Mutant: the batched version has no Python loop but no matrix product either: scores and outputs by
broadcast element-wise products and sums, where the prompt asks for @ / torch.matmul."""

# caught-by: method
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


def attention_batched(q, k, v):
    scores = (q[:, :, :, None, :] * k[:, :, None, :, :]).sum(-1) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return (weights[..., None] * v[:, :, None]).sum(-2), weights
