"""The seed's worked 2×2 example (visible: its inputs and expected values may be shown)."""

from __future__ import annotations

import torch

from checklibs.attention.calling import call_attention
from checklibs.attention.compare import compare, is_close
from checklibs.attention.inputs import example_2x2
from checklibs.attention.reference import reference_attention
from graders.code.check_api import CheckFailed, CheckFunc, StudentProxy, check

RTOL, ATOL = 1e-6, 1e-9


def _matrix(t: torch.Tensor) -> str:
    return "[" + ", ".join("[" + ", ".join(f"{x:.4f}" for x in row) + "]" for row in t.tolist()) + "]"


def _unscaled_weights(case_q: torch.Tensor, case_k: torch.Tensor) -> torch.Tensor:
    return torch.softmax(case_q @ case_k.transpose(-1, -2), dim=-1)


def reference_example_check(
    *, points: float = 2.0, entry: str = "scaled_attention", name: str = "reference_example"
) -> CheckFunc:
    """Build the check of the worked example Q = K = I, V = [[2, 0], [0, 4]], d_k = 2 (visible)."""

    @check(points=points, category="reference_example", visibility="visible", name=name)
    def reference_example(student: StudentProxy) -> str:
        """The worked 2×2 example: A ≈ [[0.6698, 0.3302], [0.3302, 0.6698]], A·V ≈ [[1.3395, 1.3210], ...]."""
        case = example_2x2()
        out, weights = call_attention(student, entry, case, visible=True)
        ref_out, ref_w = reference_attention(case.q, case.k, case.v)
        shown = f"Q = K = I, V = [[2, 0], [0, 4]] as (1, 1, 2, 2) float64 tensors; expected A = {_matrix(ref_w[0, 0])}"
        problems = [
            p
            for p in (
                compare(weights, ref_w, rtol=RTOL, atol=ATOL, what="weights A"),
                compare(out, ref_out, rtol=RTOL, atol=ATOL, what="output A·V"),
            )
            if p
        ]
        if problems:
            got = f"you returned A = {_matrix(weights[0, 0])}, A·V = {_matrix(out[0, 0])}"
            hint = ""
            if is_close(weights, _unscaled_weights(case.q, case.k)):
                hint = "\nYour weights equal softmax(Q·Kᵀ) without the 1/√d_k scaling: divide the scores by √d_k."
            expected = f"expected A·V = {_matrix(ref_out[0, 0])}"
            raise CheckFailed("\n".join([*problems, shown, expected, got]) + hint)
        return f"The 2×2 example matches: A = {_matrix(weights[0, 0])}, A·V = {_matrix(out[0, 0])}."

    return reference_example
