"""Answer graders: pure functions ``(submitted: str, spec) -> PartResult``, one module per matcher kind."""

from __future__ import annotations

from graders.answers.result import PartResult
from graders.answers.specs import PartSpec

__all__ = ["PartResult", "PartSpec", "grade_part"]


def grade_part(submitted: str, spec: PartSpec) -> PartResult:
    """Grade one answer part with the grader its spec names.

    Args:
        submitted: the student's raw text.
        spec: the part's specification from the problem set.

    Returns:
        The part's result; never raises for bad student input.
    """
    from graders.answers.dispatch import GRADERS

    return GRADERS[spec.kind](submitted, spec)
