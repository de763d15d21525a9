"""Calling the student's attention function through the proxy and checking what comes back.

Everything the jail reports is data the student controls, including the messages of the exceptions their code
raises. ``student_message`` is the one place such a message is turned into feedback: for a hidden check it keeps
the type and a short, sanitised message (runs of numbers collapsed), so a submission cannot exfiltrate hidden
inputs by raising ``ValueError(repr(q.tolist()))``.
"""

from __future__ import annotations

import re
from typing import Any

from torch import Tensor

from graders.code.attention.inputs import AttentionCase
from graders.code.checks import CheckFailed, StudentError, StudentProxy
from graders.results import Visibility

HIDDEN_MESSAGE_CHARS = 160
VISIBLE_MESSAGE_CHARS = 500
WHERE_CHARS = 80

# One "value" a hidden input could be written as: a number (int, float, exponent), a bool, nan/inf, None.
_VALUE = r"(?:[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?|True|False|None|nan|inf)"
# Three or more values separated only by commas, whitespace, brackets, semicolons, colons or bars.
_SEP = r"[\s,;:|()\[\]{}]+"
_VALUE_RUN = re.compile(rf"[\[(]*{_VALUE}(?:{_SEP}{_VALUE}){{2,}}[\])]*")
# Three or more decimals with at most three characters of any other kind between them ("a0.1b0.2c0.3").
_DECIMAL = r"[-+]?\d*\.\d+(?:[eE][-+]?\d+)?"
_DECIMAL_RUN = re.compile(rf"{_DECIMAL}(?:\D{{1,3}}?{_DECIMAL}){{2,}}")
# A single number with many digits (a value written out to full precision).
_LONG_NUMBER = re.compile(r"[-+]?\d*\.?\d{6,}(?:[eE][-+]?\d+)?|[-+]?\d+\.\d{4,}(?:[eE][-+]?\d+)?")
# A long blob of letters and digits (hex, base64): values encoded to slip past the number patterns.
_BLOB = re.compile(r"[A-Za-z0-9+/=]{24,}")
# The location the sandbox appends to a message: " (line 16, in scaled_attention)".
_WHERE = re.compile(r"\s\((line \d+, in [^()]{1,80})\)$")

INPLACE_AUTOGRAD = "a leaf Variable that requires grad is being used in an in-place operation"
INPLACE_MESSAGE = (
    "your function modifies its inputs in place (autograd refused an in-place operation on q, k or v, which "
    "require grad here): the caller's tensors must not change. Use out-of-place ops such as q = q / s instead of "
    "q /= s, q.div_(s) or q.masked_fill_(...)"
)


def _collapse_blob(match: re.Match[str]) -> str:
    text = match.group(0)
    has_digit = any(c.isdigit() for c in text)
    return "…" if has_digit and any(c.isalpha() for c in text) else text


def sanitise(message: str, *, visible: bool) -> str:
    """A student's exception message made safe to show.

    Visible checks (whose inputs may be shown): whitespace normalised, cut at ``VISIBLE_MESSAGE_CHARS``. Hidden
    checks: runs of three or more numbers or bools (lists, tensors, shapes), of three or more decimals with a few
    characters between them, single long numbers and long
    letter-and-digit blobs become "…", then the message is cut at ``HIDDEN_MESSAGE_CHARS``; the sandbox's
    "(line N, in f)" suffix is kept.
    """
    message = " ".join(message.split())
    limit = VISIBLE_MESSAGE_CHARS
    where = ""
    if not visible:
        limit = HIDDEN_MESSAGE_CHARS
        found = _WHERE.search(message)
        if found:
            where, message = f" ({found.group(1)[:WHERE_CHARS]})", message[: found.start()]
        message = _VALUE_RUN.sub("…", message)
        message = _DECIMAL_RUN.sub("…", message)
        message = _LONG_NUMBER.sub("…", message)
        message = _BLOB.sub(_collapse_blob, message)
        message = re.sub(r"…(?:[\s,;:|]*…)+", "…", message)
    if len(message) > limit:
        message = message[: limit - 1] + "…"
    return message + where


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
