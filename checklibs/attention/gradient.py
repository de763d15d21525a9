"""float64 outputs and input gradients against the reference at rtol=1e-7, atol=1e-9.

The gradients are backpropagated inside the jail (call_with_grad); None means no gradient reached an input,
which is how a detach, a numpy round trip or a non-differentiable path shows up.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import torch
from torch import Tensor

from checklibs.attention.calling import as_pair, check_pair_shapes, is_visible, student_raised
from checklibs.attention.compare import compare_words, dtype_name
from checklibs.attention.inputs import AttentionCase, generator, randn, random_case
from checklibs.attention.reference import reference_attention
from checklibs.attention.tally import Tally
from graders.code.check_api import CheckFailed, CheckFunc, StudentError, StudentProxy, check

RTOL, ATOL = 1e-7, 1e-9
INPUTS = ("q", "k", "v")


def gradient_cases(masks: bool) -> list[AttentionCase]:
    # d_v != d_k, so scaling by √d_v instead of √d_k shows in the values.
    if not masks:
        return [random_case("Tq=4, Tk=5", 54, tq=4, tk=5, dk=3, dv=4), random_case("Tq=Tk=5", 55, dk=3, dv=4)]
    return [
        random_case("key_valid", 51, tq=4, tk=5, dk=3, dv=4, masked=True),
        random_case("causal", 52, tq=5, tk=5, dk=3, dv=4, causal=True),
        random_case("causal, Tq=3, Tk=5", 56, tq=3, tk=5, dk=3, dv=4, causal=True),
    ]


def reference_gradients(case: AttentionCase, grad_out: Tensor) -> tuple[Tensor, list[Tensor]]:
    q, k, v = (t.detach().clone().requires_grad_(True) for t in (case.q, case.k, case.v))
    out, _ = reference_attention(q, k, v, case.key_valid, case.causal)
    grads = torch.autograd.grad(out, [q, k, v], grad_out)
    return out.detach(), list(grads)


def dtype_problem(value: Any, what: str, expected: torch.dtype) -> str | None:
    if isinstance(value, Tensor) and value.dtype != expected:
        return f"{what} is {dtype_name(value)}; keep the input dtype ({str(expected).replace('torch.', '')})"
    return None


def grade_case(student: StudentProxy, entry: str, case: AttentionCase, tally: Tally, *, visible: bool = False) -> None:
    """Four items per case (output, dq, dk, dv), each worth the same share of the check.

    An input modified in place shows here: q, k and v require grad, so autograd refuses the in-place operation
    and the feedback names it (calling.student_message).
    """
    b, h, tq, _ = case.q.shape
    grad_out = randn(generator(53), b, h, tq, case.v.shape[-1])
    ref_out, ref_grads = reference_gradients(case, grad_out)
    try:
        outputs, grads = student.call_with_grad(entry, case.args, case.kwargs, [grad_out, None], [0, 1, 2])
        out, _ = check_pair_shapes(*as_pair(outputs, entry, case), entry, case)
    except (StudentError, CheckFailed) as err:
        failure = student_raised(entry, case, err, visible=visible) if isinstance(err, StudentError) else err
        tally.fail(f"output, dq, dk, dv ({case.label})", failure.feedback, weight=1 + len(INPUTS))
        return

    def item_output() -> None:
        problem = dtype_problem(out, "output", case.q.dtype) or compare_words(
            out, ref_out, rtol=RTOL, atol=ATOL, what="output"
        )
        if problem:
            raise CheckFailed(problem)

    def item_grad(i: int) -> None:
        name, grad = INPUTS[i], grads[i] if i < len(grads) else None
        if grad is None:
            raise CheckFailed(f"no gradient reached {name}: did you detach or go through numpy?")
        what = f"gradient of {name}"
        problem = dtype_problem(grad, what, case.q.dtype) or compare_words(
            grad, ref_grads[i], rtol=RTOL, atol=ATOL, what=what
        )
        if problem:
            raise CheckFailed(problem)

    tally.run(f"output ({case.label})", item_output)
    for i, name in enumerate(INPUTS):
        tally.run(f"d{name} ({case.label})", partial(item_grad, i))


def gradient_check(
    *,
    points: float = 3.0,
    entry: str = "scaled_attention",
    name: str = "gradient",
    visibility: str = "hidden",
    masks: bool = True,
) -> CheckFunc:
    """Build the float64 output-and-gradient check (Q, K, V) at rtol=1e-7, atol=1e-9.

    With ``masks=False`` the cases pass only q, k, v (for functions without mask arguments, as in q6).
    """

    visible = is_visible(visibility)

    @check(points=points, category="gradient", visibility=visibility, name=name)
    def gradient(student: StudentProxy) -> str:
        """float64 output and gradients for q, k, v match the reference (rtol=1e-7, atol=1e-9)."""
        tally = Tally("float64 output and gradients")
        for case in gradient_cases(masks):
            grade_case(student, entry, case, tally, visible=visible)
        return tally.finish()

    return gradient
