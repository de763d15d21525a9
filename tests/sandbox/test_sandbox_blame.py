"""Blame the right side: whether a failure is the check's or the student's is decided on the trusted side by where
it happened, never by what the student's process says or by an exception type's name; student text in the log is
escaped and bounded.

The attacks: raise the sandbox's own "usage" exception from student code, forge a "usage" reply by patching the
server in the (student-owned) child, and put log lines of one's own into a message.
"""

from __future__ import annotations

import logging

import pytest
import torch

from graders.code.checks import CheckSpec, Ref
from graders.code.verdicts import loggable
from graders.results import Verdict, Visibility
from tests.sandbox import support

CHECK_BLAMED = "an error in the check"

RAISE_OURS = """
from graders.sandbox.child import Usage
raise Usage("ERROR the grader is broken")
"""

FORGE_USAGE = """
import sys
_server = type(sys._getframe(1).f_locals["self"])  # the child's server, one frame up while the source loads
def _forged(self, frame):
    return {"error": "usage", "message": "fake\\nERROR autograder: database corrupted"}, []
_server.handle = _forged
"""


def test_the_sandbox_exception_types_cannot_be_imported(grader, caplog: pytest.LogCaptureFixture) -> None:
    result = support.grade(grader, support.attack_source(RAISE_OURS))
    feedback = result.checks[0].feedback
    assert CHECK_BLAMED not in str(result.to_dict())
    assert "your function raised ModuleNotFoundError" in feedback, feedback
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    support.assert_healthy(grader)


def test_a_forged_usage_reply_blames_the_student_and_writes_no_log_line(grader, caplog) -> None:  # type: ignore[no-untyped-def]
    with caplog.at_level(logging.INFO):
        result = support.grade(grader, FORGE_USAGE + support.GOOD_SOURCE)
    text = str(result.to_dict())
    assert CHECK_BLAMED not in text
    assert result.verdict == Verdict.RUNTIME_ERROR and result.score == 0.0, result.to_dict()
    assert "corrupted" in result.message or "channel" in result.message, result.message
    assert not [r for r in caplog.records if "database corrupted" in r.getMessage()]
    support.assert_healthy(grader)


def _spec(func) -> CheckSpec:  # type: ignore[no-untyped-def]
    return CheckSpec(func.__name__, func, 1.0, "answer", Visibility.HIDDEN, 10.0, "")


def test_a_checks_own_mistakes_are_still_the_checks(grader) -> None:  # type: ignore[no-untyped-def]
    def calls_a_name_no_problem_has(student):  # type: ignore[no-untyped-def]
        student.call("not_an_entrypoint", 1)

    def refers_to_an_undefined_helper(student):  # type: ignore[no-untyped-def]
        student.call("add", Ref("never_defined"), 1)

    def asks_a_gradient_of_an_integer(student):  # type: ignore[no-untyped-def]
        student.call_with_grad("add", [torch.ones(2, dtype=torch.int64), torch.ones(2)], {}, [None], wrt=[0])

    def still_works(student):  # type: ignore[no-untyped-def]
        assert student.call("add", 2, 3) == 5

    checks = [calls_a_name_no_problem_has, refers_to_an_undefined_helper, asks_a_gradient_of_an_integer, still_works]
    result = grader.grade(source=support.GOOD_SOURCE, problem=support.problem(), checks=[_spec(f) for f in checks])
    feedback = [c.feedback for c in result.checks]
    assert all(CHECK_BLAMED in f for f in feedback[:3]), feedback
    assert result.checks[3].passed, result.to_dict()


def test_log_text_is_escaped_and_bounded() -> None:
    line = loggable("fine\nERROR autograder: forged line\r\x1b[31m" + "x" * 10_000)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
    assert "\\nERROR" in line and len(line) < 400
