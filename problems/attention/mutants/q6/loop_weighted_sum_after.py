"""Mutant: loops over the queries for the scores and the softmax, but forms the output after the loop with one
matrix product of all weights with v; the prompt has each query's weighted sum of the values in the loop."""

# caught-by: method
import math

import torch


def attention_loop(q, k, v):
    scale = 1.0 / math.sqrt(q.shape[-1])
    weights = []
    for i in range(q.shape[-2]):
        scores = (k @ q[..., i, :, None])[..., 0] * scale
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        weights.append(e / e.sum(dim=-1, keepdim=True))
    w = torch.stack(weights, dim=-2)
    return w @ v, w


def attention_batched(q, k, v):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
