"""Numerical stability: scores of magnitude ~1e3-1e4, where exp() without subtracting the row max overflows."""

from __future__ import annotations

from functools import partial

import torch

from graders.code.attention.calling import call_attention, is_visible
from graders.code.attention.compare import compare, nonfinite_problem
from graders.code.attention.inputs import AttentionCase, large_score_case
from graders.code.attention.reference import reference_attention
from graders.code.attention.tally import Tally
from graders.code.checks import CheckFailed, CheckFunc, StudentProxy, check

TOLERANCE = {torch.float64: (1e-9, 1e-12), torch.float32: (1e-5, 1e-6)}
HINT = (
    "exp() of scores this large overflows (or underflows to 0/0): subtract each row's maximum score before exp, "
    "or use torch.softmax"
)


def check_stable(student: StudentProxy, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
    ref_out, ref_w = reference_attention(case.q, case.k, case.v)
    out, weights = call_attention(student, entry, case, visible=visible)
    problem = nonfinite_problem(weights, "weights") or nonfinite_problem(out, "output")
    if problem:
        raise CheckFailed(f"{problem}: {HINT}")
    rtol, atol = TOLERANCE[case.q.dtype]
    for found in (
        compare(weights, ref_w, rtol=rtol, atol=atol, what="weights"),
        compare(out, ref_out, rtol=rtol, atol=atol, what="output"),
    ):
        if found:
            raise CheckFailed(found)


def stability_check(
    *, points: float = 2.0, entry: str = "scaled_attention", name: str = "stability", visibility: str = "hidden"
) -> CheckFunc:
    """Build the large-score stability check (float64 and float32)."""

    visible = is_visible(visibility)

    @check(points=points, category="stability", visibility=visibility, name=name)
    def stability(student: StudentProxy) -> str:
        """Finite, correct results when scores are ~1e3-1e4 (float64 and float32)."""
        tally = Tally("numerical stability with large scores")
        for dtype in (torch.float64, torch.float32):
            case = large_score_case(dtype)
            tally.run(case.label, partial(check_stable, student, entry, case, visible=visible))
        return tally.finish()

    return stability
