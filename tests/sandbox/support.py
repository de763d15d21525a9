"""The tiny test problem and helpers shared by tests/sandbox and tests/graders/code."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from graders.code.checks import CheckSpec, load_checks
from graders.code.grader import CodeGraderLike
from graders.model import CodeProblem
from graders.sandbox.config import SandboxConfig

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
CHECKS_PATH = HERE / "problem" / "checks.py"
GOOD_SOURCE = (HERE / "problem" / "solutions" / "good.py").read_text()
FULL_MARKS = 6.0


def problem(entrypoints: tuple[str, ...] = ("add", "scaled_attention"), **limits: float) -> CodeProblem:
    """The tiny problem; checks may call only its ``entrypoints`` (the proxy refuses other names)."""
    return CodeProblem.model_validate(
        {
            "kind": "code",
            "id": "tiny",
            "title": "tiny",
            "prompt": "prompts/tiny.md",
            "entrypoints": list(entrypoints),
            "checks": "checks/tiny.py",
            "limits": {"time_s": 5, "memory_mb": 512, "output_kb": 16, **limits},
        }
    )


def checks(grader: CodeGraderLike | None = None) -> list[CheckSpec]:
    """The tiny problem's checks: imported in the grader's jailed checker, or (no grader) here, for tests that run
    them in-process on purpose."""
    if grader is None:
        return load_checks(CHECKS_PATH)
    return grader.checks(CHECKS_PATH.parent, CHECKS_PATH.name)


def require_jail() -> None:
    """Skip without bubblewrap/root, except in CI (AUTOGRADER_TEST_REQUIRE_SERVICES=1), where that is a failure."""
    missing = []
    if shutil.which("bwrap") is None:
        missing.append("bubblewrap (bwrap) is not installed")
    if os.geteuid() != 0:
        missing.append("the jail needs root to change uids")
    if not missing:
        return
    reason = "; ".join(missing)
    if os.environ.get("AUTOGRADER_TEST_REQUIRE_SERVICES") == "1":
        pytest.fail(f"sandbox tests required but {reason}")
    pytest.skip(reason)


def require_fork(grader) -> None:
    """Skip where the grader has no memory cgroup: its children may start threads but no process (seccomp)."""
    if grader._pool.slots[0].cgroups is None:
        pytest.skip("without a memory cgroup the sandbox refuses fork (test_fork_is_refused_without_a_memory_cgroup)")


def survivors(grader) -> list[int]:
    """Host processes of the slot's uids once its released children are reaped, the pool's waiting children aside.

    Those pre-forked children (one process each, no student code yet) are the only processes a slot may hold between
    runs; anything else of its uids outlived a run.
    """
    from graders.sandbox import procfs

    slot = grader._pool.slots[0]
    slot.settle()
    waiting = set(slot.pool.pooled_pids())
    return sorted(pid for uid in slot.uids for pid in procfs.pids_of_uid(uid) if pid not in waiting)


def jail_config(**kwargs: object) -> SandboxConfig:
    return SandboxConfig(**{"mode": "bwrap", "slots": 1, **kwargs})  # type: ignore[arg-type]


ATTACK_TEMPLATE = """
import os, sys, signal, socket, time, torch
{prelude}

def add(a, b):
{body}
    return a + b


def scaled_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""


def attack_source(body: str, prelude: str = "") -> str:
    """A submission whose add() runs ``body`` first: add earns its points only if the attack did not fail."""
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return ATTACK_TEMPLATE.format(prelude=prelude, body=indented)


def grade(grader, source: str, **limits: float):
    return grader.grade(source=source, problem=problem(**limits), checks=checks(grader))


def assert_healthy(grader) -> None:
    """The next submission after an attack is graded normally."""
    result = grade(grader, GOOD_SOURCE)
    assert result.score == FULL_MARKS, result.to_dict()
