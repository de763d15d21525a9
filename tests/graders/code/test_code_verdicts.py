"""Verdicts of submissions that never reach the checks, and of partial results."""

from __future__ import annotations

from graders.results import Verdict
from tests.sandbox import support


def _grade(grader, source):
    return grader.grade(source=source, problem=support.problem(), checks=support.checks(grader))


def test_syntax_error_names_the_line(code_grader):
    result = _grade(code_grader, "import torch\n\ndef add(a, b)\n    return a + b\n")
    assert result.verdict == Verdict.SYNTAX_ERROR
    assert result.message == "SyntaxError at line 3: expected ':'"
    assert result.score == 0 and result.max_score == support.FULL_MARKS and len(result.checks) == 4


def test_missing_function_lists_what_was_found(code_grader):
    result = _grade(code_grader, "def add(a, b):\n    return a + b\n\ndef attention(q, k, v):\n    return q\n")
    assert result.verdict == Verdict.MISSING_FUNCTION
    assert result.message == "no function named scaled_attention; found: add, attention"
    assert all(c.feedback.startswith("not run: no function named") for c in result.checks)


def test_exception_at_import_is_a_runtime_error(code_grader):
    result = _grade(code_grader, "x = 1 / 0\n")
    assert result.verdict == Verdict.RUNTIME_ERROR
    assert "ZeroDivisionError" in result.message and "line 1" in result.message


def test_wrong_attention_is_partial(code_grader):
    source = support.GOOD_SOURCE.replace("dim=-1", "dim=-2")
    result = _grade(code_grader, source)
    assert result.verdict == Verdict.PARTIAL and result.score == 2.0


def test_source_over_the_limit_is_refused(code_grader):
    result = _grade(code_grader, "#" * (300 * 1024))
    assert result.score == 0 and "limit is 256 KiB" in result.message


def test_unsafe_local_mode_grades_in_dev(tmp_path):
    from graders.code.runner import grade_file
    from graders.sandbox.config import SandboxConfig

    config = SandboxConfig(mode="unsafe-local", dev_mode=True)
    result = grade_file(support.GOOD_SOURCE, support.problem(), support.CHECKS_PATH, config)
    assert result.verdict == Verdict.ACCEPTED
