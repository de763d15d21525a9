"""Calling the student's attention function through the proxy and checking what comes back.

Everything the jail reports is data the student controls, including the messages of the exceptions their code
raises. ``student_message`` turns such an exception into feedback through graders.code.sanitise.TrustedText: for a
hidden check "an exception", with neither its type nor its message, so a submission cannot exfiltrate hidden inputs
by raising ``ValueError(repr(q.tolist()))``, a class named after them, or a builtin chosen by them.
``ReturnedPair`` screens what came back before any check computes on it (odd values get student words).
"""

from __future__ import annotations

from typing import Any

from torch import Tensor

from checklibs.attention.inputs import AttentionCase
from graders.code.check_api import (
    CheckFailed,
    GraderWordedError,
    StudentError,
    StudentProxy,
    TrustedText,
    Visibility,
)

INPLACE_AUTOGRAD = "a leaf Variable that requires grad is being used in an in-place operation"
INPLACE_MESSAGE = (
    "your function modifies its inputs in place (autograd refused an in-place operation on q, k or v, which "
    "require grad here): the caller's tensors must not change. Use out-of-place ops such as q = q / s instead of "
    "q /= s, q.div_(s) or q.masked_fill_(...)"
)


def student_message(err: StudentError, *, visible: bool) -> str:
    """The exception for feedback (graders.code.sanitise.TrustedText); in-place edits of the inputs are named.

    The in-place test reads the student's message, which the student could fake: the feedback is fixed words
    either way (one bit in a hidden check: in place or not), so faking it gains nothing.
    """
    if isinstance(err, GraderWordedError):  # a limit the grader names in its own words
        return f"{err.type_name}: {err.message}"
    text = TrustedText(visible)
    if INPLACE_AUTOGRAD in err.message:
        return f"{text.exception_name(err.type_name)} from autograd: {INPLACE_MESSAGE}"
    return text.raised(err.type_name, err.message)


def is_visible(visibility: str) -> bool:
    """Only "visible" checks may show inputs; "after_due" feedback is written while the inputs are still hidden."""
    return Visibility(visibility) is Visibility.VISIBLE


class StudentRaised(CheckFailed):
    """The call raised: trusted feedback, and the type kept on the trusted side only (a check may ask "was it
    ValueError?" to add fixed words, one bit; the type itself never reaches a hidden check's feedback)."""

    def __init__(self, feedback: str, type_name: str) -> None:
        super().__init__(feedback)
        self.type_name = type_name


def student_raised(entry: str, case: AttentionCase, err: StudentError, *, visible: bool = False) -> StudentRaised:
    return StudentRaised(f"{entry}({case.describe()}) raised {student_message(err, visible=visible)}", err.type_name)


def as_pair(result: Any, entry: str, case: AttentionCase, *, visible: bool = False) -> tuple[Any, Any]:
    """The (output, weights) pair the function must return; CheckFailed if it returned something else."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        return result[0], result[1]
    # A hidden check does not repeat a length the student's code chose (it could encode a hidden value).
    length = f" of length {len(result)}" if visible and isinstance(result, (tuple, list)) else ""
    kind = f"a {type(result).__name__}{length}" if isinstance(result, (tuple, list)) else None
    raise CheckFailed(
        f"{entry}({case.describe()}) must return a pair (output, weights); it returned {kind or type(result).__name__}"
    )


def expected_shapes(case: AttentionCase) -> tuple[tuple[int, ...], tuple[int, ...]]:
    b, h, tq, _ = case.q.shape
    tk, dv = case.v.shape[2], case.v.shape[3]
    return (b, h, tq, dv), (b, h, tq, tk)


class ReturnedPair:
    """The one screen of what the student's function returned, before any check computes on it.

    A check's own code must never raise on a student's value (an empty or 0-dim tensor, a bool tensor, NaN): that
    would read "the check could not evaluate your function's result" and write a WARNING line to the service log
    for any student who asks. So every pair is screened here into student words (CheckFailed): both tensors, real
    floating point, 4-D and not empty -- and, unless a check diagnoses the raw pair (``exact=False``: transposed
    weights), of exactly the expected shapes. NaN and inf pass the screen: ``compare`` words them.
    """

    def __init__(self, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
        self.entry, self.case, self.visible = entry, case, visible

    def fail(self, problem: str) -> CheckFailed:
        return CheckFailed(f"{self.entry}({self.case.describe()}): {problem}")

    def screen(self, out: Any, weights: Any, *, exact: bool = True) -> tuple[Tensor, Tensor]:
        for what, value, shape in zip(("output", "weights"), (out, weights), expected_shapes(self.case), strict=True):
            if not isinstance(value, Tensor):
                raise self.fail(f"{what} should be a tensor, got {type(value).__name__}")
            if exact and tuple(value.shape) != shape:
                got = f"shape {tuple(value.shape)}" if self.visible else "the wrong shape"
                raise self.fail(
                    f"{what} has {got}, expected {shape} (B, H, Tq, Dv) for the output and (B, H, Tq, Tk) for the "
                    "weights"
                )
            if value.dim() != 4 or value.numel() == 0:
                raise self.fail(f"{what} should be a non-empty 4-D tensor, expected shape {shape}")
            if value.is_complex() or not value.is_floating_point():
                raise self.fail(f"{what} should be a real floating-point tensor, got dtype {value.dtype}")
        assert isinstance(out, Tensor) and isinstance(weights, Tensor)
        return out.detach().cpu(), weights.detach().cpu()


def check_pair_shapes(
    out: Any, weights: Any, entry: str, case: AttentionCase, *, visible: bool = False
) -> tuple[Tensor, Tensor]:
    """Both tensors with the right shapes (ReturnedPair.screen), or CheckFailed naming the first wrong one."""
    return ReturnedPair(entry, case, visible=visible).screen(out, weights)


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
    out, weights = as_pair(result, entry, case, visible=visible)
    return ReturnedPair(entry, case, visible=visible).screen(out, weights, exact=check_shapes)
