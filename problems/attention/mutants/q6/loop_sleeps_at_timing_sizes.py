"""Mutant (a sleep for the speed-up): the loop version follows the prompt, but at the timing sizes it sleeps and
answers with the batched code, so by the wall clock the batched version looks many times faster than "the loop".
A timing check counts the CPU time of each call: the sleep costs none, the loop is as fast as the batched version,
and the "batched is faster" points are lost."""

# caught-by: timing
import math
import time

import torch


def attention_loop(q, k, v):
    if q.shape[-2] >= 32:  # the timing sizes; every correctness check uses smaller T
        time.sleep(2e-5 * q.shape[-2])
        return attention_batched(q, k, v)
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
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
