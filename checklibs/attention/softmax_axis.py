"""Softmax over the key axis, tested on NON-symmetric scores (a symmetric example hides the wrong axis)."""

from __future__ import annotations

from functools import partial

import torch
from torch import Tensor

from checklibs.attention.calling import call_attention, check_pair_shapes, is_visible
from checklibs.attention.compare import compare, is_close
from checklibs.attention.inputs import AttentionCase, random_case
from checklibs.attention.reference import reference_attention
from checklibs.attention.tally import Tally
from graders.code.check_api import N_, CheckFailed, CheckFunc, StudentProxy, Words, check, said

RTOL, ATOL = 1e-6, 1e-9

# Each failure's headline says what to fix; its detail says how the weights showed it (graders.words).
COLUMNS = said(
    "attention.softmax_axis.columns",
    N_("Normalise over the keys (the last axis, dim=-1): your weights' columns sum to 1 instead of rows."),
)
COLUMNS_WHY = said(
    "attention.softmax_axis.columns_why",
    N_("Your softmax runs over the query axis; symmetric examples like the 2×2 one hide this."),
)
COLUMNS_MESSAGE = Words(COLUMNS, (COLUMNS_WHY,))
TRANSPOSED_MESSAGE = said(
    "attention.softmax_axis.transposed",
    N_(
        "Your weights are transposed: weights[b, h, i, j] must be the weight of key j for query i, "
        "shape (B, H, Tq, Tk)."
    ),
)
ROWS_MESSAGE = said(
    "attention.softmax_axis.rows",
    N_("Normalise over the keys: the rows of your weights (one per query) do not sum to 1."),
)
PROPERTY = said("attention.softmax_axis.property", N_("softmax over the key axis"))


def _sums_to_one(weights: Tensor, dim: int) -> bool:
    sums = weights.to(torch.float64).sum(dim)
    return bool(torch.allclose(sums, torch.ones_like(sums), rtol=0, atol=1e-6))


def check_axis(student: StudentProxy, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
    """One case: transposed weights, columns summing to 1, then values against the reference."""
    ref_out, ref_w = reference_attention(case.q, case.k, case.v, case.key_valid, case.causal)
    out, weights = call_attention(student, entry, case, check_shapes=False, visible=visible)
    if is_close(weights.transpose(-1, -2), ref_w, rtol=RTOL, atol=ATOL):
        raise CheckFailed(TRANSPOSED_MESSAGE)
    out, weights = check_pair_shapes(out, weights, entry, case)
    if not _sums_to_one(weights, -1):
        if _sums_to_one(weights, -2):
            raise CheckFailed(COLUMNS_MESSAGE)
        raise CheckFailed(ROWS_MESSAGE)
    for problem in (
        compare(weights, ref_w, rtol=RTOL, atol=ATOL, what="weights"),
        compare(out, ref_out, rtol=RTOL, atol=ATOL, what="output"),
    ):
        if problem:
            raise CheckFailed(problem)


def softmax_axis_check(
    *, points: float = 2.0, entry: str = "scaled_attention", name: str = "softmax_axis", visibility: str = "hidden"
) -> CheckFunc:
    """Build the check that softmax runs over keys, on non-symmetric scores with Tq != Tk and Tq == Tk."""

    visible = is_visible(visibility)

    @check(points=points, category="softmax_axis", visibility=visibility, name=name)
    def softmax_axis(student: StudentProxy) -> str:
        """Softmax over keys on non-symmetric scores (Tq != Tk and Tq == Tk)."""
        tally = Tally(PROPERTY)
        for case in (
            random_case("Tq=4, Tk=6", 11, tq=4, tk=6),
            random_case("Tq=Tk=5", 12, tq=5, tk=5),
        ):
            tally.run(case.label, partial(check_axis, student, entry, case, visible=visible))
        return tally.finish()

    return softmax_axis
