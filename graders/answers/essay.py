"""Essay answers: stored for an instructor to score against the rubric; the automatic score is always 0."""

from __future__ import annotations

from graders.answers.normalize import NO_ANSWER
from graders.answers.specs import EssaySpec
from graders.results import PartResult


def grade_essay(submitted: str, spec: EssaySpec) -> PartResult:
    """Record an essay answer for manual grading.

    Args:
        submitted: the student's raw text.
        spec: the part's EssaySpec (unused: nothing is scored automatically).

    Returns:
        Score 0, not correct, feedback "awaiting manual grading" (or "no answer given"); ``normalized`` is the
        trimmed text.
    """
    text = submitted.strip() if isinstance(submitted, str) else ""
    if not text:
        return PartResult(correct=False, score=0.0, feedback=NO_ANSWER, normalized=None)
    return PartResult(correct=False, score=0.0, feedback="awaiting manual grading", normalized=text)
