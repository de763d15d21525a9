"""PartResult: what every answer grader returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PartResult:
    """The grade of one answer part.

    Attributes:
        correct: True when the answer earns full credit.
        score: credit as a fraction of the part's points, in [0, 1].
        feedback: student-safe text; never gives the expected answer away.
        normalized: the submitted answer as the grader understood it (e.g. "B", "8x8x128x32"), or None
            when it could not be parsed.
    """

    correct: bool
    score: float
    feedback: str
    normalized: str | None = None
