"""What the rest of the engine and the app know of a code grader: its protocol and the time one grading may take.

Kept apart from ``graders.code.runner`` (which imports the sandbox, the proxy and so torch) so that loading a set,
grading an answer problem and every command-line command that grades no code never import torch or the sandbox.
The sandboxed grader itself is imported only where one is built (``app.worker.code_grader.build_code_grader``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from graders.code.checks import CheckSpec
from graders.model import CodeProblem
from graders.results import GradeResult


class VariantFailed(Exception):
    """A problem's generator gave no variant: it raised, ran past its time, or returned what is not JSON data."""


class CodeGraderLike(Protocol):
    """What grades a code submission: the sandboxed CodeGrader, or a test's in-process stand-in."""

    def grade(self, *, source: str, problem: CodeProblem, checks: list[CheckSpec]) -> GradeResult: ...

    def checks(self, root: Path, relative: str) -> list[CheckSpec]:
        """The checks of the set at ``root``'s file ``relative`` (imported where the set's code may run)."""
        ...


def grading_budget_s(problem: CodeProblem, checks: list[CheckSpec]) -> float:
    """The longest one grading may take: loading the source plus every check's whole budget (wall clock)."""
    return problem.limits.time_s + sum(c.timeout_s for c in checks)
