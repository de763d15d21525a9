"""Answer graders: pure functions ``(submitted: str, spec) -> PartResult``, one module per kind of blank.

``registry`` is the table of kinds (spec, grader, hint, widget); ``grade_part`` grades one part with it.
"""

from __future__ import annotations

from graders.answers.registry import ANSWER_KINDS, PartSpec, grade_part
from graders.results import PartResult

__all__ = ["ANSWER_KINDS", "PartResult", "PartSpec", "grade_part"]
