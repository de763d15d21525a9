"""Calling the student's attention function through the proxy and checking what comes back."""

from __future__ import annotations

from typing import Any

from torch import Tensor

from graders.code.attention.inputs import AttentionCase
from graders.code.checks import CheckFailed, StudentError, StudentProxy


def student_raised(entry: str, case: AttentionCase, err: StudentError) -> CheckFailed:
    return CheckFailed(f"{entry}({case.describe()}) raised {err.type_name}: {err.message}")


def as_pair(result: Any, entry: str, case: AttentionCase) -> tuple[Any, Any]:
    """The (output, weights) pair the function must return; CheckFailed if it returned something else."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result[0], result[1]
    kind = f"a {type(result).__name__} of length {len(result)}" if isinstance(result, (tuple, list)) else None
    raise CheckFailed(
        f"{entry}({case.describe()}) must return a pair (output, weights); it returned {kind or type(result).__name__}"
    )


def expected_shapes(case: AttentionCase) -> tuple[tuple[int, ...], tuple[int, ...]]:
    b, h, tq, _ = case.q.shape
    tk, dv = case.v.shape[2], case.v.shape[3]
    return (b, h, tq, dv), (b, h, tq, tk)


def check_pair_shapes(out: Any, weights: Any, entry: str, case: AttentionCase) -> tuple[Tensor, Tensor]:
    """Both tensors with the right shapes, or CheckFailed naming the first wrong one."""
    for what, value, shape in zip(("output", "weights"), (out, weights), expected_shapes(case), strict=True):
        if not isinstance(value, Tensor):
            raise CheckFailed(f"{entry}({case.describe()}): {what} should be a tensor, got {type(value).__name__}")
        if tuple(value.shape) != shape:
            raise CheckFailed(
                f"{entry}({case.describe()}): {what} has shape {tuple(value.shape)}, expected {shape} "
                "(B, H, Tq, Dv) for the output and (B, H, Tq, Tk) for the weights"
            )
    assert isinstance(out, Tensor) and isinstance(weights, Tensor)
    return out.detach().cpu(), weights.detach().cpu()


def call_attention(
    student: StudentProxy, entry: str, case: AttentionCase, *, check_shapes: bool = True
) -> tuple[Tensor, Tensor]:
    """Call ``entry`` on ``case``; CheckFailed (never StudentError) when it raises or returns the wrong kind.

    With ``check_shapes=False`` the raw pair comes back, for checks that diagnose e.g. transposed weights.
    """
    try:
        result = student.call(entry, *case.args, **case.kwargs)
    except StudentError as err:
        raise student_raised(entry, case, err) from None
    out, weights = as_pair(result, entry, case)
    if not check_shapes:
        if not isinstance(out, Tensor) or not isinstance(weights, Tensor):
            raise CheckFailed(f"{entry}({case.describe()}) must return two tensors (output, weights)")
        return out.detach().cpu(), weights.detach().cpu()
    return check_pair_shapes(out, weights, entry, case)
