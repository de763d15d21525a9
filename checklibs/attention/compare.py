"""Tensor comparison with a student-safe error report: max abs / rel error, where, and the dtype.

The report never contains the expected or actual values themselves. For a hidden check (``visible=False``, the
default) it also shows no exact number the student's output decides: a submission that returns values computed
from the hidden inputs would otherwise read them back from "max abs error 1.7512 at index (0, 0, 0, 1)". Errors are
given as an order of magnitude, counts and indices are left out, and a wrong shape names only the expected one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from graders.code.check_api import N_, Said, Words, of_text, said, text_said

DIFFERS = N_("%(what)s differs from %(against)s")
ORDERS = N_(
    "max abs error of order %(abs)s, max rel error of order %(rel)s (dtype %(dtype)s; tolerance rtol=%(rtol)s, "
    "atol=%(atol)s)"
)
EXACT = N_(
    "max abs error %(abs)s, max rel error %(rel)s, worst at index %(index)s (dtype %(dtype)s; tolerance "
    "rtol=%(rtol)s, atol=%(atol)s)"
)
# The nouns the library's comparisons name, translated where they are shown (any other name is shown as given).
NOUNS = {"weights": N_("weights"), "output": N_("output"), "the reference": N_("the reference")}


def noun(text: str) -> Said:
    """A name of what is compared, as a sentence of its own: translated when it is one of ``NOUNS``."""
    return said("attention.noun", NOUNS[text]) if text in NOUNS else text_said(text)


@dataclass(frozen=True)
class Mismatch:
    """How ``actual`` differs from ``expected``: enough evidence to debug, no hidden values."""

    what: str
    max_abs: float
    max_rel: float
    index: tuple[int, ...]
    dtype: str
    rtol: float
    atol: float
    against: str = "the reference"

    def describe(self, *, visible: bool = False) -> str:
        words = self.words(visible=visible)
        return f"{words.headline.english()}: {words.details[0].english()}"

    def words(self, *, visible: bool = False) -> Words:
        """The headline (what differs) and, as its detail, the errors: orders of magnitude unless ``visible``."""
        head = said("attention.compare.differs", DIFFERS, what=noun(self.what), against=noun(self.against))
        tolerance = {"dtype": self.dtype, "rtol": f"{self.rtol:g}", "atol": f"{self.atol:g}"}
        if not visible:
            errors = said(
                "attention.compare.orders",
                ORDERS,
                abs=magnitude(self.max_abs),
                rel=magnitude(self.max_rel),
                **tolerance,
            )
        else:
            errors = said(
                "attention.compare.exact",
                EXACT,
                abs=f"{self.max_abs:.3g}",
                rel=f"{self.max_rel:.3g}",
                index=str(self.index),
                **tolerance,
            )
        return Words(head, (errors,))


def magnitude(value: float) -> str:
    """An order of magnitude, e.g. 1.75 -> "1e+00", 0.031 -> "1e-02": about five bits, whatever the value."""
    if math.isnan(value) or math.isinf(value) or value == 0:
        return "inf" if math.isinf(value) else ("nan" if math.isnan(value) else "0")
    return f"1e{math.floor(math.log10(abs(value))):+03d}"


def dtype_name(t: Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def first_index(mask: Tensor) -> tuple[int, ...]:
    """The index of the first True element of ``mask`` (which must have one)."""
    flat = int(torch.nonzero(mask.reshape(-1))[0, 0])
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), mask.shape))


def shape_problem(actual: object, expected: Tensor, what: str, *, visible: bool = False) -> str | None:
    """Why ``actual`` cannot be compared with ``expected`` (not a tensor, wrong shape), or None."""
    if not isinstance(actual, Tensor):
        return f"{what} should be a tensor, got {type(actual).__name__}"
    if tuple(actual.shape) != tuple(expected.shape):
        got = f"shape {tuple(actual.shape)}" if visible else "the wrong shape"
        return f"{what} has {got}, expected {tuple(expected.shape)}"
    if actual.is_complex():  # refused, not compared by its real part (the imaginary part would be dropped)
        return f"{what} is complex ({dtype_name(actual)}); a real floating-point tensor is expected"
    if not actual.is_floating_point():
        return f"{what} has dtype {dtype_name(actual)}, expected a floating-point tensor"
    return None


def nonfinite_problem(actual: Tensor, what: str, *, visible: bool = False) -> str | None:
    """Where ``actual`` holds NaN or inf, or None when all values are finite."""
    bad = ~torch.isfinite(actual)
    if not bool(bad.any()):
        return None
    kinds = "NaN" if bool(torch.isnan(actual).any()) else "inf"
    if not visible:
        return f"{what} contains {kinds}"
    return f"{what} contains {kinds} ({int(bad.sum())} non-finite values, first at index {first_index(bad)})"


def mismatch(
    actual: Tensor, expected: Tensor, *, rtol: float, atol: float, what: str, against: str = "the reference"
) -> Mismatch | None:
    """Compare like torch.isclose (|a - e| <= atol + rtol·|e|, NaN never close); None when all close.

    Both are compared in float64; the reported dtype is the student's. The relative error is taken where the
    expected value is larger than atol (elsewhere it is meaningless: e.g. a masked weight that should be 0).
    """
    a = actual.detach().to("cpu", torch.float64)
    e = expected.detach().to("cpu", torch.float64)
    err = (a - e).abs()
    bad = ~torch.isclose(a, e, rtol=rtol, atol=atol)
    if not bool(bad.any()):
        return None
    err = torch.where(torch.isnan(err), torch.full_like(err, float("inf")), err)
    significant = e.abs() > atol
    rel = torch.where(significant, err / e.abs().clamp_min(atol), torch.zeros_like(err))
    # NaN on both sides (the student's two functions compared with each other) is the worst, never a NaN maximum.
    excess = torch.where(bad, err - (atol + rtol * e.abs()), torch.full_like(err, -1.0)).nan_to_num(nan=math.inf)
    worst = first_index(excess == excess.max())
    return Mismatch(what, float(err.max()), float(rel.max()), worst, dtype_name(actual), rtol, atol, against)


def _shape_or_nonfinite(actual: object, expected: Tensor, what: str, *, visible: bool) -> str | None:
    """What ``compare`` and ``compare_words`` say before comparing values: a wrong shape or type, or non-finite
    values where the reference has none."""
    problem = shape_problem(actual, expected, what, visible=visible)
    if problem is not None or not bool(torch.isfinite(expected).all()):
        return problem
    assert isinstance(actual, Tensor)
    return nonfinite_problem(actual, what, visible=visible)


def compare(
    actual: object,
    expected: Tensor,
    *,
    rtol: float,
    atol: float,
    what: str,
    against: str = "the reference",
    visible: bool = False,
) -> str | None:
    """One-line problem description (shape, non-finite values, or error report), or None when they match.

    ``visible``: the check's inputs may be shown, so the report may give exact errors, counts and indices.
    """
    problem = _shape_or_nonfinite(actual, expected, what, visible=visible)
    if problem is not None:
        return problem
    assert isinstance(actual, Tensor)
    found = mismatch(actual, expected, rtol=rtol, atol=atol, what=what, against=against)
    return found.describe(visible=visible) if found else None


def compare_words(
    actual: object,
    expected: Tensor,
    *,
    rtol: float,
    atol: float,
    what: str,
    against: str = "the reference",
    visible: bool = False,
) -> Words | None:
    """``compare`` as words (graders.words): what differs as the headline, the errors as its detail."""
    problem = _shape_or_nonfinite(actual, expected, what, visible=visible)
    if problem is not None:
        return of_text(problem)
    assert isinstance(actual, Tensor)
    found = mismatch(actual, expected, rtol=rtol, atol=atol, what=what, against=against)
    return found.words(visible=visible) if found else None


def is_close(actual: object, expected: Tensor, *, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """True when ``actual`` is a tensor of the expected shape close to ``expected`` (for diagnosing variants)."""
    if shape_problem(actual, expected, "x") is not None:
        return False
    assert isinstance(actual, Tensor)
    return mismatch(actual, expected, rtol=rtol, atol=atol, what="x") is None
