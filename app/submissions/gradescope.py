"""Gradescope's `results.json` from one graded submission: for `autograder grade --format gradescope` (inside
Gradescope's harness) and `GET /api/v1/submissions/{id}?format=gradescope` (the same document, already filtered).

Gradescope's visibility words, mapped from ours so that a student sees on Gradescope what they see on our service:

- ``visible`` -> ``visible``.
- ``hidden`` -> ``visible``: our hidden checks hide their *inputs* (the feedback is student-safe by construction),
  but their outcome is shown to the student, and Gradescope must not hide more than we do.
- ``after_due`` -> ``after_due_date`` when the set has a due date; without one our service never opens these
  checks to students, which is Gradescope's ``hidden`` (instructors only).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from app.submissions.schemas import SubmissionPublic
from graders.results import GradeResult

GsVisibility = Literal["hidden", "after_due_date", "after_published", "visible"]
SEALED_OUTPUT = "result shown after the due date"


class GradescopeTest(BaseModel):
    name: str
    score: float | None = Field(None, description="absent while the result is sealed")
    max_score: float
    status: Literal["passed", "failed"] | None = None
    output: str
    tags: list[str] = Field(default_factory=list, description="the check's category")
    visibility: GsVisibility


class GradescopeResults(BaseModel):
    """Gradescope's results.json (https://gradescope-autograders.readthedocs.io/en/latest/specs/)."""

    score: float | None = Field(description="total; absent when the submission is not graded")
    execution_time: float = Field(description="seconds spent in the checks")
    output: str
    output_format: Literal["text"] = "text"
    visibility: GsVisibility = "visible"
    stdout_visibility: GsVisibility = "hidden"
    tests: list[GradescopeTest]


@dataclass(frozen=True)
class _Row:
    name: str
    category: str
    passed: bool | None
    score: float | None
    max_score: float
    feedback: str
    visibility: str
    duration_ms: float


def gs_visibility(ours: str, *, due_at: datetime | None) -> GsVisibility:
    if ours == "after_due":
        return "after_due_date" if due_at is not None else "hidden"
    return "visible"


def _document(rows: Iterable[_Row], *, score: float | None, message: str, due_at: datetime | None) -> GradescopeResults:
    rows = list(rows)
    tests = [
        GradescopeTest(
            name=row.name,
            score=row.score,
            max_score=row.max_score,
            status=None if row.passed is None else ("passed" if row.passed else "failed"),
            output=row.feedback,
            tags=[row.category],
            visibility=gs_visibility(row.visibility, due_at=due_at),
        )
        for row in rows
    ]
    return GradescopeResults(
        score=score,
        execution_time=round(sum(r.duration_ms for r in rows) / 1000, 3),
        output=message,
        tests=tests,
    )


def from_grade_result(result: GradeResult, *, due_at: datetime | None) -> GradescopeResults:
    """Offline, inside Gradescope's harness: every check, each with the visibility Gradescope should enforce."""
    rows = (
        _Row(c.name, c.category, c.passed, c.score, c.max_score, c.feedback, str(c.visibility), c.duration_ms)
        for c in result.checks
    )
    message = f"{result.verdict}: {result.score:g} / {result.max_score:g}" + (
        f"\n{result.message}" if result.message else ""
    )
    return _document(rows, score=result.score, message=message, due_at=due_at)


def from_public(view: SubmissionPublic, *, due_at: datetime | None) -> GradescopeResults:
    """The API's view, already filtered for its viewer: sealed checks carry no score, and the total leaves them out."""
    rows = (
        _Row(c.name, c.category, c.passed, c.score, c.max_score, c.feedback, c.visibility, c.duration_ms)
        for c in view.checks
    )
    return _document(rows, score=view.final_score, message=view.message, due_at=due_at)


def error_document(message: str) -> GradescopeResults:
    """What the student sees on Gradescope when the submission cannot be graded at all (no .py file, bad input)."""
    return GradescopeResults(score=0.0, execution_time=0.0, output=message, tests=[])
