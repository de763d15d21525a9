"""Calling the student's attention function through the proxy and checking what comes back.

Everything the jail reports is data the student controls, including the messages of the exceptions their code
raises. ``student_message`` is the one place such a message is turned into feedback: for a hidden check it keeps
the type and a short, sanitised message (runs of numbers collapsed), so a submission cannot exfiltrate hidden
inputs by raising ``ValueError(repr(q.tolist()))``.
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from graders.code.attention.inputs import AttentionCase
from graders.code.checks import CheckFailed, StudentError, StudentProxy
from graders.code.sanitise import sanitise
from graders.results import Visibility

INPLACE_AUTOGRAD = "a leaf Variable that requires grad is being used in an in-place operation"
INPLACE_MESSAGE = (
    "your function modifies its inputs in place (autograd refused an in-place operation on q, k or v, which "
    "require grad here): the caller's tensors must not change. Use out-of-place ops such as q = q / s instead of "
    "q /= s, q.div_(s) or q.masked_fill_(...)"
)


def student_message(err: StudentError, *, visible: bool) -> str:
    """``TypeName: message`` for feedback, sanitised as ``sanitise`` describes; in-place edits are named."""
    if INPLACE_AUTOGRAD in err.message:
        return f"{err.type_name[:60]} from autograd: {INPLACE_MESSAGE}"
    text = sanitise(err.message, visible=visible)
    return f"{err.type_name[:60]}: {text}" if text else err.type_name[:60]


def is_visible(visibility: str) -> bool:
    """Only "visible" checks may show inputs; "after_due" feedback is written while the inputs are still hidden."""
    return Visibility(visibility) is Visibility.VISIBLE


def student_raised(entry: str, case: AttentionCase, err: StudentError, *, visible: bool = False) -> CheckFailed:
    return CheckFailed(f"{entry}({case.describe()}) raised {student_message(err, visible=visible)}")


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
    student: StudentProxy, entry: str, case: AttentionCase, *, check_shapes: bool = True, visible: bool = False
) -> tuple[Tensor, Tensor]:
    """Call ``entry`` on ``case``; CheckFailed (never StudentError) when it raises or returns the wrong kind.

    With ``check_shapes=False`` the raw pair comes back, for checks that diagnose e.g. transposed weights.
    ``visible`` says whether the check may show the student's exception message at length (see ``sanitise``).
    """
    try:
        result = student.call(entry, *case.args, **case.kwargs)
    except StudentError as err:
        raise student_raised(entry, case, err, visible=visible) from None
    out, weights = as_pair(result, entry, case)
    if not check_shapes:
        if not isinstance(out, Tensor) or not isinstance(weights, Tensor):
            raise CheckFailed(f"{entry}({case.describe()}) must return two tensors (output, weights)")
        return out.detach().cpu(), weights.detach().cpu()
    return check_pair_shapes(out, weights, entry, case)
