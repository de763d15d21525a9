"""Outputs keep the inputs' dtype and device ("保持输入的 dtype 和 device").

The gradient check already requires float64 results for float64 inputs; this check adds float32 inputs, where an
implementation that computes (and returns) everything in float64 shows, and compares the device of the returned
tensors with the inputs'. The device is meaningful only where the worker has CUDA: on a CPU-only worker a tensor
the jail returns from CUDA arrives on the CPU (graders/code/proxy.py decodes it there), so a wrong device cannot
show; the jail itself has no GPU there, so ``.cuda()`` raises instead.
"""

from __future__ import annotations

from functools import partial

import torch

from checklibs.attention.basic import attention_probe, gate, no_probe
from checklibs.attention.calling import as_pair, is_visible, student_raised
from checklibs.attention.compare import dtype_name
from checklibs.attention.inputs import AttentionCase, random_case
from checklibs.attention.tally import Tally
from graders.code.check_api import CheckFailed, CheckFunc, StudentError, StudentProxy, check


def dtype_cases() -> list[AttentionCase]:
    """Unmasked, so that only the dtype and device are judged here (masks have a check of their own)."""
    return [
        random_case("float32 inputs", 81, tq=4, tk=5, dtype=torch.float32),
        random_case("float64 inputs", 82, tq=4, tk=5, dtype=torch.float64),
    ]


def check_dtype_device(student: StudentProxy, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
    try:
        result = student.call(entry, *case.args, **case.kwargs)
    except StudentError as err:
        raise student_raised(entry, case, err, visible=visible) from None
    for what, value in zip(("output", "weights"), as_pair(result, entry, case), strict=True):
        if not isinstance(value, torch.Tensor):
            raise CheckFailed(f"{what} should be a tensor, got {type(value).__name__}")
        if value.dtype != case.q.dtype:
            raise CheckFailed(
                f"{what} is {dtype_name(value)} for {dtype_name(case.q)} inputs: keep the input dtype (do not "
                "convert to another precision and back, or return the converted tensor)"
            )
        if value.device.type != case.q.device.type:
            raise CheckFailed(f"{what} is on {value.device.type}, the inputs on {case.q.device.type}: keep the device")


def dtype_device_check(
    *,
    points: float = 1.0,
    entry: str = "scaled_attention",
    name: str = "keeps_dtype_device",
    visibility: str = "hidden",
    basic: bool = True,
    needs: str | None = "softmax_axis",
) -> CheckFunc:
    """Build the check that output and weights have the inputs' dtype (float32 and float64) and device.

    Category "shape": the form of the result. With ``basic`` (the default) the points need correct results on a
    basic case first (basic.gate). The cases pass only q, k, v, so the check suits q6's functions too.
    """
    visible = is_visible(visibility)
    probe = attention_probe(entry, visible=visible, needs=needs) if basic else no_probe

    @check(points=points, category="shape", visibility=visibility, name=name)
    def keeps_dtype_device(student: StudentProxy) -> str | None:
        """Output and weights keep the inputs' dtype (float32, float64) and device."""

        def body() -> str:
            tally = Tally("dtype and device of the results")
            for case in dtype_cases():
                tally.run(case.label, partial(check_dtype_device, student, entry, case, visible=visible))
            return tally.finish()

        return gate(student, probe, body)

    return keeps_dtype_device
