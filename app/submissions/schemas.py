"""Request and response models of the submission endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.safe_text import SafeStr
from graders.input_limits import MAX_ANSWER_PARTS


class SubmissionCreate(BaseModel):
    """Either ``answers`` (fill-in, choice, manual) or ``code`` (code problems)."""

    model_config = ConfigDict(extra="forbid")
    problem_set: SafeStr = Field(max_length=64, examples=["ch9"])
    problem: SafeStr = Field(max_length=64, examples=["q1"])
    answers: dict[SafeStr, SafeStr] | None = Field(
        default=None, max_length=MAX_ANSWER_PARTS, examples=[{"b1": "sqrt(d_k)", "b2": "V"}]
    )
    code: SafeStr | None = Field(default=None, description="Python source defining the problem's entrypoints")
    offering: int | None = Field(default=None, ge=1, le=2**31 - 1,
                                 description="the offering, when the set is assigned in several of yours")  # fmt: skip
    source: Literal["web", "api", "ci"] | None = Field(default=None, description="default: api (ci for tokens)")


class CheckPublic(BaseModel):
    name: str
    category: str
    passed: bool | None
    score: float | None
    max_score: float
    feedback: str
    visibility: str
    duration_ms: float
    words: dict[str, Any] | None = Field(
        None,
        description="the feedback as stable codes with parameters: {headline, details, needs}, each sentence "
        "{code, template, params} (docs/check-authoring.md); null where the feedback is plain text",
    )


class SubmissionPublic(BaseModel):
    id: int
    status: str
    status_url: str
    problem_set: str
    problem: str
    version: int
    attempt: int
    offering: int | None = Field(None, description="the offering of the assignment it was made under")
    source: str
    user_id: int
    created_at: datetime
    graded_at: datetime | None
    score: float | None = Field(description="automatic score of the checks you can see")
    max_score: float | None
    manual_score: float | None
    manual_feedback: str | None = Field(None, description="the instructor's comments on the rubric items")
    final_score: float | None = Field(
        description="(score + manual_score) x (1 - late_penalty) x (1 - attempt_decay); null while scores are sealed"
    )
    late_penalty: float = Field(0.0, description="fraction lost to the late policy")
    attempt_decay: float = Field(0.0, description="fraction lost to the assignment's decay per attempt")
    verdict: str | None
    message: str
    checks: list[CheckPublic]
    sealed_checks: int = Field(0, description="checks whose results open after the due date")
    explanation: dict[str, str] | None = Field(None, description="the explanation, once released")
    bug_hint: dict[str, str] | None = Field(
        None,
        description="when the submission fails exactly the checks of a known mistake (a mutant of the set's gate) "
        "and the instructor wrote words for it: those words by language code ('en' when given as one text)",
    )
    answer_key: dict[str, str] | None = Field(None, description="part id -> reference answer, once released")
    error: str | None = Field(None, description="internal grading error (instructors only)")


class SubmissionSummary(BaseModel):
    id: int
    status: str
    problem_set: str
    problem: str
    attempt: int
    offering: int | None = None
    user_id: int
    created_at: datetime
    final_score: float | None = Field(description="as in the full view: visible score + manual, less late penalty")
    max_score: float | None
    verdict: str | None
