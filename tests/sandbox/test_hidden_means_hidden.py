"""Hidden means hidden: a hidden or sealed check runs in a child of its own and its feedback is trusted text.

The attacks of the issue: stash a hidden check's input in a global and raise it later inside a visible check;
name an exception class after the hidden values; return input-derived garbage and read the values back from the
reported error; learn a sealed check's outcome from how it called the code and report it through a visible check.
"""

from __future__ import annotations

import torch

from graders.code.checks import CheckFailed, CheckSpec
from graders.code.runner import CodeGrader
from graders.results import Visibility
from tests.sandbox import support

SECRET = [1.7512, 0.1528, -2.0625]


def _spec(func, visibility: Visibility) -> CheckSpec:  # type: ignore[no-untyped-def]
    return CheckSpec(func.__name__, func, 1.0, "answer", visibility, 10.0, "")


def _hidden_call(student):  # type: ignore[no-untyped-def]
    student.call("add", torch.tensor(SECRET, dtype=torch.float64), torch.zeros(3, dtype=torch.float64))


def _visible_call(student):  # type: ignore[no-untyped-def]
    if student.call("add", 2, 3) != 5:
        raise CheckFailed("add(2, 3) is not 5")


def _grade(grader: CodeGrader, source: str, checks: list[CheckSpec]):  # type: ignore[no-untyped-def]
    return grader.grade(source=source, problem=support.problem(), checks=checks)


STASH = """
import torch
_seen = []

def add(a, b):
    if isinstance(a, torch.Tensor):
        _seen.append(a.tolist())
        return a + b
    if _seen:
        raise ValueError("STOLEN " + repr(_seen))
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""


def test_a_hidden_input_stashed_in_a_global_is_gone_by_the_visible_check(grader: CodeGrader) -> None:
    for hidden in (Visibility.HIDDEN, Visibility.AFTER_DUE):
        result = _grade(grader, STASH, [_spec(_hidden_call, hidden), _spec(_visible_call, Visibility.VISIBLE)])
        text = str(result.to_dict())
        assert "STOLEN" not in text and "1.7512" not in text, text
        assert result.checks[1].passed  # the visible check's child never saw the hidden call


CLASS_NAME = """
import torch

def add(a, b):
    if isinstance(a, torch.Tensor):
        raise type("q=" + ",".join(f"{x:.4f}" for x in a.tolist()), (Exception,), {})("and " + repr(a.tolist()))
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""


def test_an_exception_class_named_after_the_hidden_input_is_not_shown(grader: CodeGrader) -> None:
    result = _grade(grader, CLASS_NAME, [_spec(_hidden_call, Visibility.HIDDEN)])
    feedback = result.checks[0].feedback
    assert "1.7512" not in feedback and "q=" not in feedback, feedback
    assert feedback == "your function raised an exception (hidden checks show neither its type nor its message)"


def test_input_derived_garbage_is_reported_only_as_an_order_of_magnitude(grader: CodeGrader) -> None:
    # The library's hidden comparisons: a submission returning q itself would read q back from "max abs error".
    source = support.GOOD_SOURCE.replace(
        "def scaled_attention(q, k, v, mask=None):", "def _unused(q, k, v, mask=None):"
    )
    source += "\n\ndef scaled_attention(q, k, v, mask=None):\n    return q * 0 + q[..., :1] * 1000\n"

    def compare_hidden(student):  # type: ignore[no-untyped-def]
        from checklibs.attention.compare import compare

        q = torch.tensor([[[SECRET[0], SECRET[1]]]], dtype=torch.float64)
        got = student.call("scaled_attention", q, q, q)
        problem = compare(got, torch.zeros_like(q), rtol=1e-7, atol=1e-9, what="output")
        if problem:
            raise CheckFailed(problem)

    result = _grade(grader, source, [_spec(compare_hidden, Visibility.HIDDEN)])
    feedback = result.checks[0].feedback
    assert "of order 1e+03" in feedback and "1751" not in feedback and "index" not in feedback, feedback


CALL_PATTERN = """
import torch
_calls = []

def add(a, b):
    _calls.append(type(a).__name__)
    if not isinstance(a, torch.Tensor) and len(_calls) > 1:
        raise ValueError("SEALED CHECK CALLED ME " + repr(_calls))
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""


def test_a_sealed_checks_calls_cannot_be_reported_through_a_visible_check(grader: CodeGrader) -> None:
    result = _grade(
        grader, CALL_PATTERN, [_spec(_hidden_call, Visibility.AFTER_DUE), _spec(_visible_call, Visibility.VISIBLE)]
    )
    assert "SEALED CHECK" not in str(result.to_dict())
    assert result.checks[1].passed
