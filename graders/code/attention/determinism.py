"""Determinism and unmodified inputs.

What the RPC boundary lets us see: arguments are copied into the jail for every call, so the trusted side's
tensors can never change and a second call always receives fresh, identical copies. So:
- repeatability is tested by calling twice with the same inputs and requiring bit-identical results (catches
  dropout left on, random tie-breaking, state kept between calls);
- in-place mutation of an input (``q /= math.sqrt(d)``) is invisible from outside: it is detected by a probe
  ``define()``d inside the jail that snapshots the arguments it passes, calls the student's function and reports
  which changed (jail_sources.MUTATION_PROBE_SOURCE). The gradient check also catches the common form, since an
  in-place op on a leaf that requires grad raises there.
"""

from __future__ import annotations

import torch

from graders.code.attention.calling import call_attention
from graders.code.attention.inputs import random_case
from graders.code.attention.jail_sources import MUTATION_PROBE_NAME, MUTATION_PROBE_SOURCE
from graders.code.attention.tally import Tally
from graders.code.checks import CheckFailed, CheckFunc, StudentError, StudentProxy, check


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.nan_to_num(), b.nan_to_num()))


def check_repeatable(student: StudentProxy, entry: str) -> None:
    case = random_case("repeat", 61)
    first = call_attention(student, entry, case)
    second = call_attention(student, entry, case)
    for what, a, b in zip(("output", "weights"), first, second, strict=True):
        if not _same(a, b):
            raise CheckFailed(
                f"two calls with the same inputs gave different {what}: no randomness (dropout, random "
                "tie-breaking) and no state kept between calls"
            )


def check_inputs_unchanged(student: StudentProxy, entry: str) -> None:
    case = random_case("mutation", 62)
    student.define(MUTATION_PROBE_SOURCE)
    try:
        changed = student.call(MUTATION_PROBE_NAME, entry, *case.args, **case.kwargs)
    except StudentError as err:
        raise CheckFailed(f"{entry}({case.describe()}) raised {err.type_name}: {err.message}") from None
    if not isinstance(changed, (list, tuple)) or not all(isinstance(n, str) for n in changed):
        raise CheckFailed("the input-mutation probe returned an unexpected value")
    if changed:
        raise CheckFailed(
            f"your function modified its input(s) {', '.join(changed)} in place: the caller's tensors must not "
            "change (use out-of-place ops such as q / s instead of q /= s or q.div_(s))"
        )


def determinism_check(
    *, points: float = 1.0, entry: str = "scaled_attention", name: str = "determinism", visibility: str = "hidden"
) -> CheckFunc:
    """Build the check: identical results for identical inputs, and inputs not modified in place."""

    @check(points=points, category="determinism", visibility=visibility, name=name)
    def determinism(student: StudentProxy) -> str:
        """Same inputs give the same outputs twice; the inputs are not modified in place."""
        tally = Tally("determinism")
        tally.run("same inputs twice", lambda: check_repeatable(student, entry))
        tally.run("inputs not modified", lambda: check_inputs_unchanged(student, entry))
        return tally.finish()

    return determinism
