"""A hidden check's feedback never carries hidden inputs out through the student's own exception message."""

from __future__ import annotations

from tests.sandbox import support

EXFILTRATE = """
if isinstance(a, torch.Tensor):
    raise ValueError("LEAK " + repr(a.tolist()) + " " + repr(b.tolist()))
"""


def test_hidden_check_shows_none_of_the_students_exception_text(grader) -> None:  # type: ignore[no-untyped-def]
    support.require_jail()
    result = support.grade(grader, support.attack_source(EXFILTRATE))
    hidden = next(c for c in result.checks if c.name == "add_tensors")
    assert not hidden.passed
    assert "raised an exception" in hidden.feedback  # that it raised, but neither its type (~5.7 bits) nor its text
    assert "ValueError" not in hidden.feedback
    assert "LEAK" not in hidden.feedback and "0.0" not in hidden.feedback
    support.assert_healthy(grader)
