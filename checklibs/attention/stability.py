"""Numerical stability: scores of magnitude ~1e3-1e4, where exp() without subtracting the row max overflows.

The cases (inputs.large_score_case, large_score_heads_case): one head; then B = H = 2 with the heads' maxima ~1e4
apart (one maximum subtracted over several rows underflows), and for q5 a mask that hides each row's largest score
(exponentiating before masking, or renormalising an unmasked softmax, gives 0/0).
"""

from __future__ import annotations

from functools import partial

import torch

from checklibs.attention.calling import call_attention, is_visible
from checklibs.attention.compare import compare_words, nonfinite_problem
from checklibs.attention.inputs import AttentionCase, large_score_case, large_score_heads_case
from checklibs.attention.reference import reference_attention, scaled_scores
from checklibs.attention.tally import Tally
from graders.code.check_api import CheckFailed, CheckFunc, StudentProxy, check

# The expected weights are exact (inputs.large_score_case), but a correct float32 formulation still rounds: e.g.
# exp(s - logsumexp(s)) where logsumexp(s) ≈ 1e4 + log 2 is rounded to float32's spacing near 1e4 (~1e-3), an
# error of ~5e-4 in the weights. So float32 is judged against a few float32 spacings at the case's largest score;
# the mistakes this check is for give NaN, inf or weights off by O(1).
FLOAT64_TOLERANCE = (1e-9, 1e-12)
FLOAT32_SPACINGS = 8
HINT = (
    "exp() of scores this large overflows (or underflows to 0/0): subtract each row's maximum score before exp, "
    "or use torch.softmax"
)
MASK_HINT = (
    "; with a mask, take the maximum and the softmax over the allowed keys only (fill masked scores with -inf first): "
    "a masked key may hold the row's largest score"
)


def tolerance(case: AttentionCase) -> tuple[float, float]:
    """(rtol, atol) a correct formulation meets in the case's dtype (float32: relative to its largest score)."""
    if case.q.dtype == torch.float64:
        return FLOAT64_TOLERANCE
    largest = float(scaled_scores(case.q.double(), case.k.double()).abs().max())
    spacing = FLOAT32_SPACINGS * torch.finfo(case.q.dtype).eps * max(largest, 1.0)
    return spacing, spacing


def stability_cases(masks: bool) -> list[AttentionCase]:
    """One head with no mask, then B = H = 2 with far-apart head maxima and (``masks``) the maximum masked."""
    cases = []
    for dtype in (torch.float64, torch.float32):
        cases += [large_score_case(dtype), large_score_heads_case(dtype, masked=masks)]
    return cases


def check_stable(student: StudentProxy, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
    ref_out, ref_w = reference_attention(case.q, case.k, case.v, case.key_valid, case.causal)
    out, weights = call_attention(student, entry, case, visible=visible)
    problem = nonfinite_problem(weights, "weights") or nonfinite_problem(out, "output")
    if problem:
        raise CheckFailed(f"{problem}: {HINT}{MASK_HINT if case.key_valid is not None else ''}")
    rtol, atol = tolerance(case)
    for found in (
        compare_words(weights, ref_w, rtol=rtol, atol=atol, what="weights"),
        compare_words(out, ref_out, rtol=rtol, atol=atol, what="output"),
    ):
        if found:
            raise CheckFailed(found)


def stability_check(
    *,
    points: float = 2.0,
    entry: str = "scaled_attention",
    name: str = "stability",
    visibility: str = "hidden",
    masks: bool = True,
) -> CheckFunc:
    """Build the large-score stability check (float64 and float32; one head, then several heads and batches).

    With ``masks=False`` the cases pass only q, k, v (for functions without mask arguments, as in q6).
    """

    visible = is_visible(visibility)

    @check(points=points, category="stability", visibility=visibility, name=name)
    def stability(student: StudentProxy) -> str:
        """Finite, correct results when scores are ~1e3-1e4 (float64 and float32, several heads, masks)."""
        tally = Tally("numerical stability with large scores")
        for case in stability_cases(masks):
            tally.run(case.label, partial(check_stable, student, entry, case, visible=visible))
        return tally.finish()

    return stability
