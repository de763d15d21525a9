"""q7's layers: instructor source ``define()``d in the jail and handed to the student's test as ``Ref(name)``.

Each layer is ``layer(x, key_valid=None)`` with x (B, T, D) float and key_valid (B, T) bool (True = valid),
returning (B, T, D); weights come from a fixed seed, in x's dtype, for any D. Half are permutation-equivariant
(the student's test must return), half are not (it must raise AssertionError). The source is not secret (it runs
beside the student's code); the names are opaque so a test cannot branch on them.

A layer that ignores key_valid entirely is still equivariant, so "ignores the mask" is represented by a layer
that uses the mask by position (as a prefix length), which breaks equivariance when the mask is permuted.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LayerSpec:
    name: str
    equivariant: bool
    what: str  # student-facing: shown in feedback once the test has judged the layer


LAYERS = [
    LayerSpec("_ag_layer_0", True, "masked single-head self-attention with learned projections"),
    LayerSpec("_ag_layer_1", False, "adds fixed sinusoidal positional encodings to x before attention"),
    LayerSpec("_ag_layer_2", True, "a Transformer block (pre-norm attention + position-wise MLP, residuals)"),
    LayerSpec("_ag_layer_3", False, "causal self-attention: token i attends only positions j <= i"),
    LayerSpec("_ag_layer_4", True, "masked two-head self-attention"),
    LayerSpec(
        "_ag_layer_5",
        False,
        "uses key_valid by position: it keeps the first sum(key_valid) positions (a prefix mask), so permuting "
        "the mask does not move it with the tokens",
    ),
]

LAYERS_SOURCE = """
def _ag_weights(d, like, seed, count):
    import torch

    g = torch.Generator().manual_seed(seed)
    w = torch.randn(count, d, d, generator=g, dtype=torch.float64) / d ** 0.5
    return w.to(dtype=like.dtype, device=like.device)


def _ag_attend(x, key_valid, seed, causal=False, heads=1):
    import math
    import torch

    b, t, d = x.shape
    heads = heads if d % heads == 0 else 1
    wq, wk, wv = _ag_weights(d, x, seed, 3)
    q, k, v = ((x @ w).reshape(b, t, heads, d // heads).transpose(1, 2) for w in (wq, wk, wv))
    s = q @ k.transpose(-1, -2) / math.sqrt(d // heads)
    allowed = torch.ones(b, 1, t, t, dtype=torch.bool, device=x.device)
    if key_valid is not None:
        allowed = allowed & key_valid.to(torch.bool).reshape(b, 1, 1, t)
    if causal:
        allowed = allowed & torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
    w = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num(0.0)
    return (w @ v).transpose(1, 2).reshape(b, t, d)


def _ag_layer_0(x, key_valid=None):
    return _ag_attend(x, key_valid, 101)


def _ag_layer_1(x, key_valid=None):
    import torch

    t, d = x.shape[1], x.shape[2]
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    freq = torch.exp(-torch.arange(d, dtype=torch.float64) * (4.0 / max(d, 1)))[None, :]
    pe = torch.where(torch.arange(d)[None, :] % 2 == 0, torch.sin(pos * freq), torch.cos(pos * freq))
    return _ag_attend(x + pe.to(dtype=x.dtype, device=x.device), key_valid, 102)


def _ag_layer_2(x, key_valid=None):
    import torch

    def norm(y):
        return torch.nn.functional.layer_norm(y, y.shape[-1:])

    w1, w2 = _ag_weights(x.shape[-1], x, 103, 2)
    h = x + _ag_attend(norm(x), key_valid, 104)
    return h + torch.tanh(norm(h) @ w1) @ w2


def _ag_layer_3(x, key_valid=None):
    return _ag_attend(x, key_valid, 105, causal=True)


def _ag_layer_4(x, key_valid=None):
    return _ag_attend(x, key_valid, 106, heads=2)


def _ag_layer_5(x, key_valid=None):
    import torch

    b, t = x.shape[0], x.shape[1]
    if key_valid is None:
        return _ag_attend(x, None, 107)
    lengths = key_valid.to(torch.bool).sum(dim=-1)
    prefix = torch.arange(t, device=x.device)[None, :] < lengths[:, None]
    return _ag_attend(x, prefix, 107)
"""
