"""Attack: odd return values get a student verdict in words, never a check error, and write nothing to the log.

A check's own code that raised on what the student returned (an empty or 0-dim tensor, NaN, a bool tensor) used to
end in "the check could not evaluate your function's result" and a WARNING line in the service log, one per
submission: any student could write to the log and read back which of the check's steps broke. Each form is
returned from every entry point, through the engine's own run_check, for every check of the set.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import cast

import pytest

from graders.code.checks import CheckSpec, load_checks
from graders.code.proxy import SandboxProxy
from graders.code.slot_grading import run_check
from tests.checklibs.attention.direct_proxy import DirectProxy

SET_ROOT = Path(__file__).resolve().parents[3] / "problems" / "attention"
ENTRIES = ("scaled_attention", "attention_loop", "attention_batched")

RETURNS = {
    "empty": "torch.empty(0), torch.empty(0)",
    "zero_dim": "torch.tensor(1.0), torch.tensor(1.0)",
    "empty_rows": "torch.empty(q.shape[0], q.shape[1], 0, v.shape[-1]), torch.empty(q.shape[0], q.shape[1], 0, 0)",
    "nan_output": (
        "torch.full((*q.shape[:3], v.shape[-1]), float('nan'), dtype=q.dtype), "
        "torch.softmax(q @ k.transpose(-1, -2), -1)"
    ),
    "nan_both": (
        "torch.full((*q.shape[:3], v.shape[-1]), float('nan'), dtype=q.dtype), "
        "torch.full((*q.shape[:3], k.shape[2]), float('nan'), dtype=q.dtype)"
    ),
    "bool": "torch.ones(*q.shape[:3], v.shape[-1], dtype=torch.bool), torch.ones(*q.shape[:3], k.shape[2]).bool()",
    "inf_weights": ("q.new_zeros(*q.shape[:3], v.shape[-1]), q.new_full((*q.shape[:3], k.shape[2]), float('inf'))"),
}


def odd_source(kind: str) -> str:
    body = f"import torch\n\ndef odd(q, k, v, *args, **kwargs):\n    return {RETURNS[kind]}\n"
    return body + "".join(f"\n{name} = odd\n" for name in ENTRIES)


def checks() -> list[CheckSpec]:
    specs = [spec for q in ("q5", "q6") for spec in load_checks(SET_ROOT / "checks" / f"{q}.py")]
    return [spec for spec in specs if spec.category not in ("timing", "method")]


CHECKS = checks()


@pytest.mark.parametrize("kind", sorted(RETURNS))
@pytest.mark.parametrize("spec", CHECKS, ids=[f"{spec.name}" for spec in CHECKS])
def test_an_odd_return_value_is_the_students_verdict(
    spec: CheckSpec, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    outcome = run_check(spec, cast(SandboxProxy, DirectProxy(odd_source(kind))))
    feedback = outcome.result.feedback
    assert "could not evaluate" not in feedback, feedback
    assert outcome.failure is None or outcome.failure != "check_error", feedback
    assert not outcome.result.passed, feedback
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
