"""Determinism: the same inputs give bit-identical results twice.

What the RPC boundary lets us see: arguments are copied into the jail for every call, so the trusted side's
tensors can never change and a second call always receives fresh, identical copies. Repeatability is tested by
calling twice with the same inputs and requiring bit-identical results (catches dropout left on, random
tie-breaking, state kept between calls); both results are compared here, on the trusted side.

In-place modification of an input (``q /= math.sqrt(d)``) is not visible from outside, and anything that would
look for it inside the jail runs beside the student's code, which can patch it (``torch.equal``, the probe
itself, or a check of who is calling). It is caught by the gradient check instead: ``call_with_grad`` makes
q, k and v leaves that require grad, autograd refuses an in-place operation on them, and the feedback says
"your function modifies its inputs in place" (calling.student_message). The verdict is the trusted side's
comparison of gradients with the reference: a function that edits its inputs only when they do not require grad
computes nothing wrong that could reach the caller, since arguments are copied across the boundary.
"""

from __future__ import annotations

import torch

from checklibs.attention.basic import attention_probe, gate, no_probe
from checklibs.attention.calling import call_attention, is_visible
from checklibs.attention.inputs import random_case
from graders.code.check_api import CheckFailed, CheckFunc, StudentProxy, check


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(torch.equal(a.nan_to_num(), b.nan_to_num()))


def check_repeatable(student: StudentProxy, entry: str, *, visible: bool = False) -> None:
    case = random_case("repeat", 61)
    first = call_attention(student, entry, case, visible=visible)
    second = call_attention(student, entry, case, visible=visible)
    for what, a, b in zip(("output", "weights"), first, second, strict=True):
        if not _same(a, b):
            raise CheckFailed(
                f"two calls with the same inputs gave different {what}: no randomness (dropout, random "
                "tie-breaking) and no state kept between calls"
            )


def determinism_check(
    *,
    points: float = 1.0,
    entry: str = "scaled_attention",
    name: str = "determinism",
    visibility: str = "hidden",
    basic: bool = True,
    needs: str | None = "softmax_axis",
) -> CheckFunc:
    """Build the check: identical results for identical inputs (in-place edits: see the module docstring).

    With ``basic`` (the default) the points need correct results on a basic case first (basic.gate; ``needs``
    names the check of the set that tests that case, for the feedback): returning
    zeros twice is repeatable too.
    """
    visible = is_visible(visibility)
    probe = attention_probe(entry, visible=visible, needs=needs) if basic else no_probe

    @check(points=points, category="determinism", visibility=visibility, name=name)
    def determinism(student: StudentProxy) -> str | None:
        """Same inputs give bit-identical outputs and weights twice."""

        def body() -> str:
            check_repeatable(student, entry, visible=visible)
            return "two calls with the same inputs gave bit-identical outputs and weights."

        return gate(student, probe, body)

    return determinism
