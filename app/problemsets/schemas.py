"""Response models of the problem-set endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.safe_text import SafeStr


class ProblemSetSummary(BaseModel):
    id: str
    title: str
    version: int
    problems: int
    due_at: datetime | None = Field(description="your due date (the assignment's, or your extension)")
    offering: int = Field(description="the offering it is assigned in")
    assignment: int
    open_at: datetime | None
    max_attempts: int | None = Field(description="attempts per problem (with your extra ones); null: unlimited")


class UploadResult(BaseModel):
    id: str
    version: int
    created: bool
    content_hash: str
    report: dict[str, Any]
    offering: int = Field(description="the offering it is assigned in")


class AliasRequest(BaseModel):
    """One more accepted answer for a text blank, as a new version of the set."""

    model_config = ConfigDict(extra="forbid")

    problem: SafeStr = Field(max_length=64, description="the problem's id, e.g. q3")
    part: SafeStr = Field(max_length=16, description="the blank, e.g. b3")
    answer: SafeStr = Field(min_length=1, max_length=200, description="the answer to accept (compared after the "
                        "blank's normalisation, as the gradebook's wrong answers show it)")  # fmt: skip
    offering: int | None = Field(default=None, ge=1, le=2**31 - 1, description="the offering you ask from, "
                                 "when the set is assigned in several of yours")  # fmt: skip


class VersionPublic(BaseModel):
    number: int
    label: str
    content_hash: str
    created_at: datetime
    report: dict[str, Any]


class PartView(BaseModel):
    """One part (blank) of a problem as a student sees it: never its answer or its accept/reject cases."""

    model_config = ConfigDict(extra="allow")  # an answer kind may add its own fields (graders.answers.registry)
    id: str = Field(examples=["b1"])
    kind: str = Field(description="the answer kind, e.g. text, numeric, shape, symbolic, choice, essay")
    points: float
    hint: str = Field(description="the format the blank expects, e.g. 'number, e.g. 0.75 or 3^4'")
    widget: Literal["line", "matrix", "essay", "options"] = Field(description="how a form shows the blank")
    options: list[str] | None = Field(default=None, description="choice parts: the option labels")
    multi: bool | None = Field(default=None, description="choice parts: several options may be picked")


class RubricItemView(BaseModel):
    id: str
    points: float
    description: str


class CodeLimitsView(BaseModel):
    time_s: float
    memory_mb: int
    output_kb: int
    source_kb: int


class ProblemView(BaseModel):
    """A problem of the student view; the fields after ``parts`` appear for the kinds that have them."""

    model_config = ConfigDict(extra="allow")  # a problem kind may add its own fields (graders.kinds)
    id: str
    title: str
    kind: str = Field(description="fill_in, choice, code or manual")
    takes: Literal["answers", "code"] = Field(description="what a submission sends: 'answers' or 'code'")
    prompt: str = Field(description="Markdown with $...$ math; (b1), (b2)... mark the blanks")
    points: float | None = Field(description="the most the problem is worth; null until known")
    rubric: list[RubricItemView] = Field(description="items an instructor scores by hand")
    parts: list[PartView]
    options: dict[str, str] | None = Field(default=None, description="choice problems: label -> option text")
    entrypoints: list[str] | None = Field(default=None, description="code problems: functions to define")
    gradable: bool | None = Field(default=None, description="code problems: whether submissions are accepted")
    limits: CodeLimitsView | None = Field(default=None, description="code problems: per-call limits")


class ProblemSetView(BaseModel):
    """The student view of a set: prompts, parts and points; never answers, checks, solutions or mutants."""

    id: str
    title: str
    description: str
    version: int
    due_at: datetime | None
    problems: list[ProblemView]
