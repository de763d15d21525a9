"""Tensor comparison with a student-safe error report: max abs / rel error, where, and the dtype.

The report never contains the expected or actual values themselves, so it is safe for hidden checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor


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

    def describe(self) -> str:
        return (
            f"{self.what} differs from {self.against}: max abs error {self.max_abs:.3g}, max rel error "
            f"{self.max_rel:.3g}, worst at index {self.index} (dtype {self.dtype}; tolerance rtol={self.rtol:g}, "
            f"atol={self.atol:g})"
        )


def dtype_name(t: Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def first_index(mask: Tensor) -> tuple[int, ...]:
    """The index of the first True element of ``mask`` (which must have one)."""
    flat = int(torch.nonzero(mask.reshape(-1))[0, 0])
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), mask.shape))


def shape_problem(actual: object, expected: Tensor, what: str) -> str | None:
    """Why ``actual`` cannot be compared with ``expected`` (not a tensor, wrong shape), or None."""
    if not isinstance(actual, Tensor):
        return f"{what} should be a tensor, got {type(actual).__name__}"
    if tuple(actual.shape) != tuple(expected.shape):
        return f"{what} has shape {tuple(actual.shape)}, expected {tuple(expected.shape)}"
    if not (actual.is_floating_point() or actual.is_complex()):
        return f"{what} has dtype {dtype_name(actual)}, expected a floating-point tensor"
    return None


def nonfinite_problem(actual: Tensor, what: str) -> str | None:
    """Where ``actual`` holds NaN or inf, or None when all values are finite."""
    bad = ~torch.isfinite(actual)
    if not bool(bad.any()):
        return None
    kinds = "NaN" if bool(torch.isnan(actual).any()) else "inf"
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
    excess = torch.where(bad, err - (atol + rtol * e.abs()), torch.full_like(err, -1.0))
    worst = first_index(excess == excess.max())
    return Mismatch(what, float(err.max()), float(rel.max()), worst, dtype_name(actual), rtol, atol, against)


def compare(
    actual: object, expected: Tensor, *, rtol: float, atol: float, what: str, against: str = "the reference"
) -> str | None:
    """One-line problem description (shape, non-finite values, or error report), or None when they match."""
    problem = shape_problem(actual, expected, what)
    if problem is not None:
        return problem
    assert isinstance(actual, Tensor)
    if bool(torch.isfinite(expected).all()):
        problem = nonfinite_problem(actual, what)
        if problem is not None:
            return problem
    found = mismatch(actual, expected, rtol=rtol, atol=atol, what=what, against=against)
    return found.describe() if found else None


def is_close(actual: object, expected: Tensor, *, rtol: float = 1e-6, atol: float = 1e-9) -> bool:
    """True when ``actual`` is a tensor of the expected shape close to ``expected`` (for diagnosing variants)."""
    if shape_problem(actual, expected, "x") is not None:
        return False
    assert isinstance(actual, Tensor)
    return mismatch(actual, expected, rtol=rtol, atol=atol, what="x") is None
