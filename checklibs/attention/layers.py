"""q7's layers: trusted functions handed to the student's test as opaque callables (``checks.TrustedFunction``).

Each layer is ``layer(x, key_valid=None)`` with x (B, T, D) float and key_valid (B, T) bool (True = valid),
returning (B, T, D) in x's dtype on x's device, for any D. Half are permutation-equivariant (the student's test must
return), half are not (it must raise AssertionError).

Nothing about a layer may tell a test which layer it is without testing it (the review's attacks: a fixed name,
then ``layer.__code__.co_consts`` and a patched ``builtins.compile`` reading the source the grader sent). So the
layers never enter the jail: the test holds a proxy whose calls come back here over the pipe (docs/sandbox.md,
"Trusted functions"), one type and repr for every layer, distinguished only by a random handle that is new for
every call. What a test can still observe is what any caller can:

- outputs: the weights are drawn from a fresh random seed for every layer set (``make_layers``), so a test cannot
  look a layer's outputs up in a table computed from this file;
- refusals: ``_arguments`` checks the arguments the same way for every layer before any layer runs, and every
  other failure reaches the student as one fixed message (``proxy.CALLBACK_FAILED``); the layers compute in
  float64 and cast back, so no dtype works for one layer and fails for another;
- time: a Transformer block takes longer than one attention. That is a measurement of the layer, not a shortcut.

A layer that ignores key_valid entirely is still equivariant, so "ignores the mask" is represented by a layer
that uses the mask by position (as a prefix length), which breaks equivariance when the mask is permuted.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from graders.code.check_api import ArgumentRejected, TrustedFunction

# What one call may ask of the trusted side (it runs there, on the grader's CPU and memory).
MAX_BATCH, MAX_TOKENS, MAX_FEATURES = 32, 128, 256
USAGE = "layer(x, key_valid=None) takes x, a (B, T, D) floating-point tensor, and key_valid, None or a (B, T) tensor"


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


def _weights(d: int, like: Tensor, seed: int, count: int) -> Tensor:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(count, d, d, generator=g, dtype=torch.float64) / d**0.5
    return w.to(device=like.device)


def _attend(x: Tensor, key_valid: Tensor | None, w: Tensor, *, causal: bool = False, heads: int = 1) -> Tensor:
    b, t, d = x.shape
    heads = heads if d % heads == 0 else 1
    q, k, v = ((x @ w[i]).reshape(b, t, heads, d // heads).transpose(1, 2) for i in range(3))
    s = q @ k.transpose(-1, -2) / math.sqrt(d // heads)
    allowed = torch.ones(b, 1, t, t, dtype=torch.bool, device=x.device)
    if key_valid is not None:
        allowed = allowed & key_valid.reshape(b, 1, 1, t)
    if causal:
        allowed = allowed & torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
    weights = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1).nan_to_num(0.0)
    return (weights @ v).transpose(1, 2).reshape(b, t, d)


def _attention(x: Tensor, key_valid: Tensor | None, seed: int) -> Tensor:
    return _attend(x, key_valid, _weights(x.shape[-1], x, seed, 3))


def _positions(x: Tensor, key_valid: Tensor | None, seed: int) -> Tensor:
    t, d = x.shape[1], x.shape[2]
    pos = torch.arange(t, dtype=torch.float64)[:, None]
    freq = torch.exp(-torch.arange(d, dtype=torch.float64) * (4.0 / max(d, 1)))[None, :]
    pe = torch.where(torch.arange(d)[None, :] % 2 == 0, torch.sin(pos * freq), torch.cos(pos * freq))
    return _attend(x + pe.to(device=x.device), key_valid, _weights(d, x, seed, 3))


def _block(x: Tensor, key_valid: Tensor | None, seed: int) -> Tensor:
    def norm(y: Tensor) -> Tensor:
        return torch.nn.functional.layer_norm(y, y.shape[-1:])

    w = _weights(x.shape[-1], x, seed, 5)
    h = x + _attend(norm(x), key_valid, w[:3])
    return h + torch.tanh(norm(h) @ w[3]) @ w[4]


def _causal(x: Tensor, key_valid: Tensor | None, seed: int) -> Tensor:
    return _attend(x, key_valid, _weights(x.shape[-1], x, seed, 3), causal=True)


def _two_heads(x: Tensor, key_valid: Tensor | None, seed: int) -> Tensor:
    return _attend(x, key_valid, _weights(x.shape[-1], x, seed, 3), heads=2)


def _prefix_mask(x: Tensor, key_valid: Tensor | None, seed: int) -> Tensor:
    w = _weights(x.shape[-1], x, seed, 3)
    if key_valid is None:
        return _attend(x, None, w)
    lengths = key_valid.sum(dim=-1)
    prefix = torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None]
    return _attend(x, prefix, w)


_BODIES: dict[str, Callable[[Tensor, Tensor | None, int], Tensor]] = {
    "attention": _attention,
    "positions": _positions,
    "block": _block,
    "causal": _causal,
    "two_heads": _two_heads,
    "prefix_mask": _prefix_mask,
}


def _describe(value: Any) -> str:
    if type(value) is Tensor:
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    return f"a {type(value).__name__}"


def _arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Tensor, Tensor | None]:
    """(x, key_valid) as ``layer(x, key_valid=None)`` binds them, checked alike for every layer."""
    names = ("x", "key_valid")[: len(args)]
    if len(args) > 2 or not set(kwargs) <= {"x", "key_valid"} or set(names) & set(kwargs):
        raise ArgumentRejected(USAGE, type_name="TypeError")
    bound = dict(zip(names, args, strict=True)) | kwargs
    if "x" not in bound:
        raise ArgumentRejected(USAGE, type_name="TypeError")
    x, key_valid = bound["x"], bound.get("key_valid")
    if type(x) is not Tensor or x.ndim != 3 or not x.is_floating_point():
        raise ArgumentRejected(
            f"x must be a (B, T, D) floating-point tensor, not {_describe(x)}", type_name="TypeError"
        )
    b, t, d = x.shape
    if not (1 <= b <= MAX_BATCH and 1 <= t <= MAX_TOKENS and 1 <= d <= MAX_FEATURES):
        raise ArgumentRejected(
            f"x has shape {tuple(x.shape)}; the layers take 1 <= B <= {MAX_BATCH}, 1 <= T <= {MAX_TOKENS} and "
            f"1 <= D <= {MAX_FEATURES}"
        )
    if key_valid is None:
        return x, None
    if type(key_valid) is not Tensor or key_valid.is_complex():
        raise ArgumentRejected(
            f"key_valid must be None or a (B, T) tensor, not {_describe(key_valid)}", type_name="TypeError"
        )
    if tuple(key_valid.shape) != (b, t):
        raise ArgumentRejected(
            f"key_valid has shape {tuple(key_valid.shape)}; x of shape {tuple(x.shape)} needs ({b}, {t})"
        )
    return x, key_valid.to(dtype=torch.bool, device=x.device)


def layer_function(key: str, seed: int) -> Callable[..., Tensor]:
    """The layer ``key`` with weights drawn from ``seed``: computed in float64, returned in x's dtype."""
    body = _BODIES[key]

    def layer(*args: Any, **kwargs: Any) -> Tensor:
        x, key_valid = _arguments(args, kwargs)
        with torch.no_grad():
            out = body(x.to(torch.float64), key_valid, seed)
            # Layers computed in x's own precision are equivariant only up to rounding (the sums run in another
            # order after a permutation), and the prompt asks tests to compare with a tolerance: keep that, with
            # a wiggle of a few units in the last place of x's dtype (float32's, at most) that depends on the
            # position.
            positions = torch.arange(out.shape[1], dtype=torch.float64, device=out.device)
            ulp = min(torch.finfo(x.dtype).eps, torch.finfo(torch.float32).eps)
            wiggle = 1 + 4 * ulp * torch.cos(1.7 * positions)[None, :, None]
            return (out * wiggle).to(x.dtype)

    return layer


def make_layers(layers: list[LayerSpec]) -> dict[str, TrustedFunction]:
    """``layers`` as trusted functions, each with weights from a fresh random seed: key -> function."""
    return {spec.key: TrustedFunction(layer_function(spec.key, secrets.randbits(62))) for spec in layers}


def random_order(items: list[LayerSpec]) -> list[LayerSpec]:
    """``items`` shuffled with the ``secrets`` generator (unpredictable, unlike a seeded ``random``)."""
    pool, order = list(items), []
    while pool:
        order.append(pool.pop(secrets.randbelow(len(pool))))
    return order
