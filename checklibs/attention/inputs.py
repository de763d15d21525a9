"""Seeded inputs for the checks: every tensor comes from a torch.Generator, so a check is deterministic."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor


@dataclass(frozen=True)
class AttentionCase:
    """One call of ``scaled_attention``: its arguments and a label naming what the case exercises."""

    label: str
    q: Tensor
    k: Tensor
    v: Tensor
    key_valid: Tensor | None = None
    causal: bool = False

    @property
    def args(self) -> list[Any]:
        return [self.q, self.k, self.v]

    @property
    def kwargs(self) -> dict[str, Any]:
        # Only non-default options are passed, so the case also works for signatures without them (q6).
        kwargs: dict[str, Any] = {}
        if self.key_valid is not None:
            kwargs["key_valid"] = self.key_valid
        if self.causal:
            kwargs["causal"] = True
        return kwargs

    def describe(self) -> str:
        """Shapes and options only: safe to show for hidden checks (no values)."""
        parts = [f"q {tuple(self.q.shape)}", f"k {tuple(self.k.shape)}", f"v {tuple(self.v.shape)}"]
        if self.key_valid is not None:
            parts.append(f"key_valid {tuple(self.key_valid.shape)}")
        if self.causal:
            parts.append("causal=True")
        parts.append(str(self.q.dtype).replace("torch.", ""))
        return ", ".join(parts)

    def with_(self, **changes: Any) -> AttentionCase:
        return replace(self, **changes)


def generator(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def randn(gen: torch.Generator, *shape: int, dtype: torch.dtype = torch.float64) -> Tensor:
    return torch.randn(*shape, generator=gen, dtype=dtype)


def key_valid_mask(gen: torch.Generator, batch: int, tk: int, *, p_valid: float = 0.6) -> Tensor:
    """A random (B, Tk) key mask, not a prefix, with at least one True and one False per row.

    Both kinds in every row keep the inverted mask well defined, so an inverted-mask bug can be recognised.
    """
    mask = torch.rand(batch, tk, generator=gen) < p_valid
    for b in range(batch):
        on, off = torch.randperm(tk, generator=gen)[:2].tolist()
        mask[b, on], mask[b, off] = True, False
    return mask


def random_case(
    label: str,
    seed: int,
    *,
    b: int = 2,
    h: int = 2,
    tq: int = 5,
    tk: int = 5,
    dk: int = 4,
    dv: int = 3,
    masked: bool = False,
    causal: bool = False,
    dtype: torch.dtype = torch.float64,
) -> AttentionCase:
    """Random N(0, 1) q, k, v (d_v != d_k by default, so scaling by the wrong size shows)."""
    gen = generator(seed)
    q, k, v = randn(gen, b, h, tq, dk, dtype=dtype), randn(gen, b, h, tk, dk, dtype=dtype), randn(gen, b, h, tk, dv)
    key_valid = key_valid_mask(gen, b, tk) if masked else None
    if key_valid is not None and causal:
        key_valid[:, 0] = True  # with causal, query 0 sees only key 0: keep it valid so no row is empty
    return AttentionCase(label, q, k, v.to(dtype), key_valid, causal)


def example_2x2() -> AttentionCase:
    """The seed's worked example: Q = K = I, V = [[2, 0], [0, 4]], d_k = 2, as (1, 1, 2, 2) tensors."""
    eye = torch.eye(2, dtype=torch.float64)
    v = torch.tensor([[2.0, 0.0], [0.0, 4.0]], dtype=torch.float64)
    return AttentionCase("the 2×2 example", eye[None, None], eye[None, None].clone(), v[None, None])


def large_score_case(dtype: torch.dtype) -> AttentionCase:
    """Scores of magnitude ~1e3-1e4 with exact, well-separated values: a naive exp overflows or underflows.

    K = 2000·I (d_k = Tk = 4, √d_k = 2) and integer Q make every score an exact multiple of 1000, so the
    expected weights are exact (one-hot, or 1/2 where two maxima tie) in float32 and float64 alike.
    """
    q_rows = [[3, -2, 7, 1], [-9, -4, -6, -5], [5, 5, -1, 0], [10, 0, -10, 2], [-7, -3, -3, -8]]
    q = torch.tensor(q_rows, dtype=dtype)[None, None]
    k = (2000.0 * torch.eye(4, dtype=dtype))[None, None]
    v = randn(generator(7), 1, 1, 4, 3).to(dtype)
    return AttentionCase(f"large scores ({str(dtype).replace('torch.', '')})", q, k, v)


def large_score_heads_case(dtype: torch.dtype, *, masked: bool) -> AttentionCase:
    """Scores ~1e3-1e4 with B = H = 2, the heads' row maxima far apart, and (``masked``) the maximum on masked keys.

    As in ``large_score_case``, K = 2000·I and integer Q make every score an exact multiple of 1000; each query row
    holds distinct integers, so the expected weights are exactly one-hot. Head (b, 1) only has scores <= -5000
    while head (b, 0) reaches +10000: subtracting one maximum over several heads (or the batch) underflows a
    whole row to 0/0. With ``masked``, key_valid masks key b + 1 of batch b, and that key holds every row's largest
    score: exponentiating before masking, or masking and renormalising the weights of an unmasked softmax, leaves
    0/0 on the allowed keys.
    """
    gen = generator(71 if masked else 72)
    b, h, tq, tk = 2, 2, 5, 4
    q = torch.empty(b, h, tq, tk, dtype=torch.float64)
    for bi in range(b):
        for hi in range(h):
            low, high = (-10, 10) if hi == 0 else (-10, -5)
            for i in range(tq):
                values = (low + torch.randperm(high - low, generator=gen)[:tk]).to(torch.float64)  # distinct, < high
                if masked:  # swap the row's largest value onto the masked key, then raise it above all others
                    top, largest = bi + 1, int(values.argmax())
                    values[largest] = float(values[top])
                    values[top] = float(high)
                q[bi, hi, i] = values
    key_valid = None
    if masked:
        key_valid = torch.ones(b, tk, dtype=torch.bool)
        key_valid[0, 1], key_valid[1, 2] = False, False
    k = (2000.0 * torch.eye(tk, dtype=torch.float64)).expand(b, h, tk, tk).clone()
    v = randn(gen, b, h, tk, 3)
    what = "key_valid masks each row's largest score" if masked else "heads with far-apart maxima"
    label = f"large scores, B=H=2, {what} ({str(dtype).replace('torch.', '')})"
    return AttentionCase(label, q.to(dtype), k.to(dtype), v.to(dtype), key_valid)


def permutation(gen: torch.Generator, n: int) -> Tensor:
    """A random permutation that moves at least half of the positions (so position-dependence shows)."""
    while True:
        perm = torch.randperm(n, generator=gen)
        if int((perm != torch.arange(n)).sum()) >= math.ceil(n / 2):
            return perm
