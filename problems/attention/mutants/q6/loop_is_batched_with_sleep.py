"""Mutant (points without work): the "loop" version is the batched code plus a sleep that grows with T, so it
is correct, agrees, and looks many times slower. It used to earn 12/12; the loop's rules (a per-query loop, no
torch.softmax, no whole score matrix) are now checked on the source."""

# caught-by: method
import math
import time

import torch


def attention_loop(q, k, v):
    time.sleep(2e-5 * q.shape[-2])
    return attention_batched(q, k, v)


def attention_batched(q, k, v):
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return weights @ v, weights
