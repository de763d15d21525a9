"""q7's layers: instructor source ``define()``d in the jail and handed to the student's test as ``Ref(name)``.

Each layer is ``layer(x, key_valid=None)`` with x (B, T, D) float and key_valid (B, T) bool (True = valid),
returning (B, T, D); weights come from a fixed seed, in x's dtype, for any D. Half are permutation-equivariant
(the student's test must return), half are not (it must raise AssertionError). The source is not secret (it runs
beside the student's code).

Nothing about a layer object may tell a test which layer it is, or the test could answer without testing (the
review's attack: ``assert layer.__name__ in ("_ag_layer_0", ...)``). So ``layers_source`` writes each layer's
``def`` under a random name (``secrets.token_hex``), which is also its ``__name__``, ``__qualname__`` and code
name, in a random order, and no fixed name refers to it. What cannot be hidden: the layer runs in the student's
process, so a submission that disassembles ``layer.__code__`` (its constants, its bytecode) can still fingerprint
it; that is reverse-engineering the grader, not a by-name shortcut, and shows in the code.

A layer that ignores key_valid entirely is still equivariant, so "ignores the mask" is represented by a layer
that uses the mask by position (as a prefix length), which breaks equivariance when the mask is permuted.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass


@dataclass(frozen=True)
class LayerSpec:
    key: str  # trusted side only: selects the body below; never reaches the jail
    equivariant: bool
    what: str  # student-facing: shown in feedback once the test has judged the layer


LAYERS = [
    LayerSpec("attention", True, "masked single-head self-attention with learned projections"),
    LayerSpec("positions", False, "adds fixed sinusoidal positional encodings to x before attention"),
    LayerSpec("block", True, "a Transformer block (pre-norm attention + position-wise MLP, residuals)"),
    LayerSpec("causal", False, "causal self-attention: token i attends only positions j <= i"),
    LayerSpec("two_heads", True, "masked two-head self-attention"),
    LayerSpec(
        "prefix_mask",
        False,
        "uses key_valid by position: it keeps the first sum(key_valid) positions (a prefix mask), so permuting "
        "the mask does not move it with the tokens",
    ),
]

# Shared by every layer, so naming them says nothing about which layer calls them.
_HELPERS = """
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
"""

# One ``def {name}`` per layer; {name} is filled with a random identifier per definition.
_BODIES = {
    "attention": """
def {name}(x, key_valid=None):
    return _ag_attend(x, key_valid, 101)
""",
    "positions": """
def {name}(x, key_valid=None):
    import torch

    t, d = x.shape[1], x.shape[2]
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    freq = torch.exp(-torch.arange(d, dtype=torch.float64) * (4.0 / max(d, 1)))[None, :]
    pe = torch.where(torch.arange(d)[None, :] % 2 == 0, torch.sin(pos * freq), torch.cos(pos * freq))
    return _ag_attend(x + pe.to(dtype=x.dtype, device=x.device), key_valid, 102)
""",
    "block": """
def {name}(x, key_valid=None):
    import torch

    def norm(y):
        return torch.nn.functional.layer_norm(y, y.shape[-1:])

    w1, w2 = _ag_weights(x.shape[-1], x, 103, 2)
    h = x + _ag_attend(norm(x), key_valid, 104)
    return h + torch.tanh(norm(h) @ w1) @ w2
""",
    "causal": """
def {name}(x, key_valid=None):
    return _ag_attend(x, key_valid, 105, causal=True)
""",
    "two_heads": """
def {name}(x, key_valid=None):
    return _ag_attend(x, key_valid, 106, heads=2)
""",
    "prefix_mask": """
def {name}(x, key_valid=None):
    import torch

    b, t = x.shape[0], x.shape[1]
    if key_valid is None:
        return _ag_attend(x, None, 107)
    lengths = key_valid.to(torch.bool).sum(dim=-1)
    prefix = torch.arange(t, device=x.device)[None, :] < lengths[:, None]
    return _ag_attend(x, prefix, 107)
""",
}


def random_name() -> str:
    """An identifier that says nothing: "f" and 16 random hex digits."""
    return "f" + secrets.token_hex(8)


def random_order(items: list[LayerSpec]) -> list[LayerSpec]:
    """``items`` shuffled with the ``secrets`` generator (unpredictable, unlike a seeded ``random``)."""
    pool, order = list(items), []
    while pool:
        order.append(pool.pop(secrets.randbelow(len(pool))))
    return order


def layers_source(names: dict[str, str]) -> str:
    """Source defining the layers of ``names`` (LayerSpec.key -> identifier) in the order given."""
    return _HELPERS + "".join(_BODIES[key].format(name=name) for key, name in names.items())


def define_layers(layers: list[LayerSpec]) -> tuple[str, dict[str, str]]:
    """Fresh random names for ``layers``, defined in a random order: (source, key -> name)."""
    names = {spec.key: random_name() for spec in random_order(layers)}
    return layers_source(names), names
