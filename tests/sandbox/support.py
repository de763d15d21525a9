"""The tiny test problem and helpers shared by tests/sandbox and tests/graders/code."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from graders.code.checks import CheckSpec, load_checks
from graders.problemset.schema import CodeProblem
from graders.sandbox.config import SandboxConfig

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
CHECKS_PATH = HERE / "problem" / "checks.py"
GOOD_SOURCE = (HERE / "problem" / "solutions" / "good.py").read_text()
FULL_MARKS = 6.0


def problem(**limits: float) -> CodeProblem:
    return CodeProblem.model_validate(
        {
            "kind": "code",
            "id": "tiny",
            "title": "tiny",
            "prompt": "prompts/tiny.md",
            "entrypoints": ["add", "scaled_attention"],
            "checks": "checks/tiny.py",
            "limits": {"time_s": 5, "memory_mb": 512, "output_kb": 16, **limits},
        }
    )


def checks() -> list[CheckSpec]:
    return load_checks(CHECKS_PATH)


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


def jail_config(**kwargs: object) -> SandboxConfig:
    return SandboxConfig(mode="bwrap", slots=1, **kwargs)  # type: ignore[arg-type]
