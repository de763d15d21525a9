"""The result structures every grader produces: one shape for the API, the CLI's --json and the database.

The bottom layer of graders/: it imports nothing else of the project (docs/architecture.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any


class Verdict(StrEnum):
    """Outcome of one graded submission.

    Student outcomes are kept apart from INTERNAL_ERROR, which means the grader (not the student) failed: such a
    submission is retried and never silently scored 0.
    """

    ACCEPTED = "accepted"
    PARTIAL = "partial"
    WRONG_ANSWER = "wrong_answer"
    PENDING_MANUAL = "pending_manual"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    SYNTAX_ERROR = "syntax_error"
    MISSING_FUNCTION = "missing_function"
    BAD_RETURN_TYPE = "bad_return_type"
    INTERNAL_ERROR = "internal_error"


class Visibility(StrEnum):
    VISIBLE = "visible"
    HIDDEN = "hidden"
    AFTER_DUE = "after_due"


# The fixed vocabulary of check categories (DESIGN.md, "Check results").
CATEGORIES = frozenset(
    {
        "reference_example",
        "softmax_axis",
        "masking",
        "empty_row",
        "validation",
        "shape",
        "gradient",
        "stability",
        "determinism",
        "equivariance",
        "timing",
        "method",
        "limits",
        "answer",
        "manual",
    }
)


@dataclass
class CheckResult:
    """One check (or one answer part) of a graded submission."""

    name: str
    category: str
    passed: bool
    score: float
    max_score: float
    feedback: str
    visibility: Visibility = Visibility.VISIBLE
    duration_ms: float = 0.0
    # The feedback as stable codes with parameters (graders.words.Words.to_wire()), for the pages to word in the
    # viewer's language; None for plain text (answer parts, older results).
    words: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["visibility"] = str(self.visibility)
        return data


@dataclass
class GradeResult:
    """A whole graded submission: the sum of its checks plus an overall verdict."""

    verdict: Verdict
    checks: list[CheckResult] = field(default_factory=list)
    message: str = ""

    @property
    def score(self) -> float:
        return round(sum(c.score for c in self.checks), 6)

    @property
    def max_score(self) -> float:
        return round(sum(c.max_score for c in self.checks), 6)

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "max_score": self.max_score,
            "verdict": str(self.verdict),
            "message": self.message,
            "checks": [c.to_dict() for c in self.checks],
        }


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


def verdict_from_checks(checks: list[CheckResult], *, pending_manual: bool = False) -> Verdict:
    """Derive the overall verdict of answer-style grading from its checks."""
    if pending_manual:
        return Verdict.PENDING_MANUAL
    if checks and all(c.passed for c in checks):
        return Verdict.ACCEPTED
    if any(c.score > 0 for c in checks):
        return Verdict.PARTIAL
    return Verdict.WRONG_ANSWER
