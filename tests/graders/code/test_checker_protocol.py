"""The service's side of the checker protocol: what a checker says is validated, never trusted as it comes."""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.code.checker import protocol
from graders.code.checks import GraderWordedError, StudentError
from graders.code.proxy import BadReturnValue, CheckBudgetExceeded, CheckUsageError
from graders.code.runner import CodeGrader
from graders.model import CodeProblem
from graders.sandbox.config import SandboxConfig
from graders.sandbox.errors import RunEnded

GOOD = {"name": "c", "points": 1, "category": "shape", "visibility": "hidden", "timeout_s": 5, "description": "d"}


@pytest.mark.parametrize(
    "bad",
    [
        {"name": ""},
        {"name": 3},
        {"name": "x" * 201},
        {"points": True},
        {"points": float("nan")},
        {"points": -1},
        {"timeout_s": 0},
        {"timeout_s": 10_000},
        {"category": "not-a-category"},
        {"visibility": "public"},
    ],
)
def test_a_bad_description_is_refused(bad: dict[str, object]) -> None:
    with pytest.raises(protocol.BadDescription):
        protocol.parse_spec({**GOOD, **bad})


def test_a_good_description_is_read() -> None:
    spec = protocol.parse_spec({**GOOD, "description": "x" * 10_000})
    assert spec["points"] == 1.0 and spec["timeout_s"] == 5.0 and len(spec["description"]) <= protocol.TEXT_CHARS


@pytest.mark.parametrize(
    "exc",
    [
        RunEnded("timeout", "ran past"),
        BadReturnValue("a subclass"),
        GraderWordedError("MemoryError", "limit"),
        StudentError("ValueError", "bad"),
        CheckBudgetExceeded("budget"),
        CheckUsageError("usage"),
        TypeError("type"),
    ],
)
def test_exceptions_cross_as_their_kind(exc: BaseException) -> None:
    again = protocol.rebuild(protocol.raise_fields(exc))
    assert type(again) is type(exc) and str(again) == str(exc)


def test_an_unknown_kind_is_a_plain_error_named_safely() -> None:
    again = protocol.rebuild({"raise": "pickle", "type": "os.system('x')", "message": "m" * 10_000})
    assert type(again).__name__ == "Exception" and len(str(again)) <= protocol.TEXT_CHARS
    assert type(protocol.rebuild({"raise": "error", "type": "KeyError", "message": "k"})).__name__ == "KeyError"


def test_a_check_that_never_returns_costs_its_check_only(tmp_path: Path) -> None:
    """The service waits for the checker under a deadline: a hung check is the check's error, then grading goes on."""
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "c.py").write_text(
        "from graders.code.checks import check\n\n"
        "@check(points=1, category='shape', visibility='visible', timeout_s=1)\n"
        "def hangs(student):\n    while True:\n        pass\n\n"
        "@check(points=1, category='shape', visibility='visible', timeout_s=5)\n"
        "def adds(student):\n    assert student.call('add', 2, 3) == 5\n"
    )
    problem = CodeProblem.model_validate(
        {"kind": "code", "id": "c", "title": "c", "prompt": "p.md", "entrypoints": ["add"], "checks": "checks/c.py",
         "limits": {"time_s": 1}}
    )  # fmt: skip
    with CodeGrader(SandboxConfig(mode="unsafe-local", dev_mode=True, prefork=0)) as grader:
        checks = grader.checks(tmp_path, "checks/c.py")
        result = grader.grade(source="def add(a, b):\n    return a + b\n", problem=problem, checks=checks)
    hangs, adds = result.checks
    assert not hangs.passed and "the check could not run" in hangs.feedback, hangs
    assert adds.passed, adds
