"""The problem-set model: pydantic types of problemset.yaml. Errors name the path inside the file and what was expected.

This layer sits above graders.answers (a fill-in part is an answer spec) and below everything that grades.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, SerializeAsAny, field_validator, model_validator

from graders.answers.registry import PartSpec, kind_name, table_union
from graders.answers.specs import AnswerSpec, ChoiceSpec

ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}$"
PARAMETER_PATTERN = r"[A-Za-z][A-Za-z0-9_]{0,31}"


def _relative_path(value: str) -> str:
    """Paths inside a set: relative, no "..", plain characters only (they become archive member names)."""
    if not re.fullmatch(r"[A-Za-z0-9_./-]+", value) or value.startswith("/") or ".." in value.split("/"):
        raise ValueError(f"{value!r} must be a relative path inside the set (letters, digits, _ . / -; no '..')")
    return value


RelPath = Annotated[str, AfterValidator(_relative_path)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LatePolicy(_Model):
    penalty_per_day: float = Field(default=0.0, ge=0, le=1, description="fraction of the score lost per late day")
    max_late_days: int = Field(default=0, ge=0, description="submissions later than this are refused")


class RubricItem(_Model):
    id: str = Field(pattern=ID_PATTERN)
    points: float = Field(gt=0)
    description: str


class ProblemBase(_Model):
    """What every problem declares; each kind's model adds ``kind: Literal[...]`` and its own fields."""

    kind: str  # each kind narrows it to its Literal name
    id: str = Field(pattern=ID_PATTERN)
    title: str
    prompt: RelPath = Field(description="a Markdown file under prompts/")
    explanation: RelPath | None = Field(default=None, description="Markdown shown after grading, when the set allows")
    rubric: list[RubricItem] = Field(default_factory=list, description="items an instructor scores by hand")
    parameters: list[str] = Field(
        default_factory=list,
        max_length=50,
        description="names the prompt uses as {%name%}; each student's values come from the generator",
    )
    generator: RelPath | None = Field(
        default=None,
        description="a Python file of the set defining generate(seed) -> {params, parts}; run in the set's jailed "
        "checker only (graders/problemset/variants.py)",
    )

    @model_validator(mode="after")
    def _parameters(self) -> ProblemBase:
        for name in self.parameters:
            if not re.fullmatch(PARAMETER_PATTERN, name):
                raise ValueError(f"parameter {name!r} is not a name (letters, digits, _; a letter first)")
        if len(set(self.parameters)) != len(self.parameters):
            raise ValueError("parameters: a name is listed twice")
        if bool(self.parameters) != (self.generator is not None):
            raise ValueError("parameters and generator go together: a problem with one needs the other")
        return self

    def part_ids(self) -> list[str]:
        """The ids of the answer parts a submission fills in (none for code problems)."""
        return []

    def answer_parts(self) -> list[AnswerSpec]:
        """The answer spec of each part, in the order of ``part_ids`` (none for code problems; a manual problem's
        essay is graded by hand and has none either)."""
        return []

    def instructor_code(self) -> InstructorCode | None:
        """The instructor's programs this problem is graded with, or None where grading runs none (answers, or a
        code problem whose checks are not written yet)."""
        return None


@dataclass(frozen=True)
class InstructorCode:
    """Where a problem's grading code lies in its set: the checks file (imported in the set's jailed checker only)
    and the folders of reference solutions and known-wrong mutants that the gate grades before students see it;
    ``bug_hints`` names the mutant files that have a hint for students."""

    checks: str
    solutions: str
    mutants: str
    bug_hints: tuple[str, ...] = ()


class FillInProblem(ProblemBase):
    kind: Literal["fill_in"]
    parts: list[PartSpec] = Field(min_length=1)

    def part_ids(self) -> list[str]:
        return [f"b{i}" for i in range(1, len(self.parts) + 1)]

    def answer_parts(self) -> list[AnswerSpec]:
        return list(self.parts)


class ChoiceProblem(ProblemBase):
    """A choice question; it has one part, b1."""

    kind: Literal["choice"]
    options: dict[str, str] = Field(min_length=2, description="label -> option text")
    answer: list[str] = Field(min_length=1)
    multi: bool = False
    scheme: Literal["all_or_nothing", "per_option"] = "all_or_nothing"
    penalty: float = Field(default=1.0, ge=0)
    points: float = Field(default=1.0, ge=0)
    accept: list[str] = Field(default_factory=list)
    reject: list[str] = Field(default_factory=list)

    @property
    def parts(self) -> list[ChoiceSpec]:
        return [
            ChoiceSpec(
                kind="choice",
                options=list(self.options),
                answer=self.answer,
                multi=self.multi,
                scheme=self.scheme,
                penalty=self.penalty,
                points=self.points,
                accept=self.accept,
                reject=self.reject,
            )
        ]

    def part_ids(self) -> list[str]:
        return ["b1"]

    def answer_parts(self) -> list[AnswerSpec]:
        return list(self.parts)

    @model_validator(mode="after")
    def _check_answer(self) -> ChoiceProblem:
        self.parts  # noqa: B018 - building the ChoiceSpec validates answer against options
        return self


class CodeLimits(_Model):
    time_s: float = Field(default=10.0, gt=0, le=300, description="wall-clock budget of one call")
    memory_mb: int = Field(default=1024, ge=64, le=16384)
    output_kb: int = Field(default=64, ge=1, le=4096, description="captured stdout+stderr kept")
    source_kb: int = Field(default=256, ge=1, le=4096, description="largest accepted upload")


def _bug_hint(value: str | dict[str, str]) -> str | dict[str, str]:
    texts = [value] if isinstance(value, str) else list(value.values())
    if not texts or any(not t.strip() or len(t) > 500 for t in texts):
        raise ValueError("a bug hint is a text of 1 to 500 characters (or one per language)")
    return value


# What a student is told when the submission behaves like a known mistake (app.submissions.presenter).
BugHint = Annotated[str | dict[str, str], AfterValidator(_bug_hint)]


class CodeProblem(ProblemBase):
    kind: Literal["code"]
    entrypoints: list[str] = Field(min_length=1, description="function names the student must define")
    checks: RelPath = Field(description="a Python file under checks/")
    limits: CodeLimits = Field(default_factory=CodeLimits)
    solutions: RelPath | None = Field(default=None, description="folder; default solutions/<id>")
    mutants: RelPath | None = Field(default=None, description="folder; default mutants/<id>")
    # A code problem may be defined before its checks exist; it is then shown but not gradable.
    gradable: bool = True
    bug_hints: dict[str, BugHint] = Field(
        default_factory=dict,
        description="mutant file name (under the mutants folder) -> what to tell a student whose submission fails "
        "exactly the checks that mutant fails in the gate: one text, or one per language ({en: ..., zh_CN: ...}); "
        "none by default",
    )

    @model_validator(mode="after")
    def _identifiers(self) -> CodeProblem:
        for name in self.entrypoints:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ValueError(f"entrypoint {name!r} is not a Python identifier")
        for mutant in self.bug_hints:
            if not re.fullmatch(r"[A-Za-z0-9_.-]+\.py", mutant):
                raise ValueError(f"bug_hints: {mutant!r} is not a mutant's file name (e.g. wrong_softmax_axis.py)")
        return self

    def solutions_dir(self) -> str:
        return self.solutions or f"solutions/{self.id}"

    def mutants_dir(self) -> str:
        return self.mutants or f"mutants/{self.id}"

    def instructor_code(self) -> InstructorCode | None:
        if not self.gradable:
            return None
        return InstructorCode(self.checks, self.solutions_dir(), self.mutants_dir(), tuple(self.bug_hints))


class ManualProblem(ProblemBase):
    """Free-text answer (part b1) scored by an instructor against the rubric."""

    kind: Literal["manual"]

    @model_validator(mode="after")
    def _has_rubric(self) -> ManualProblem:
        if not self.rubric:
            raise ValueError("a manual problem needs at least one rubric item")
        return self

    def part_ids(self) -> list[str]:
        return ["b1"]


# Problem kind -> its model. graders.kinds gives each kind its behaviour; a kind defined outside this module
# registers its model here (register_problem_model) so that problemset.yaml can use it.
PROBLEM_MODELS: dict[str, type[ProblemBase]] = {}


def register_problem_model(model: type[ProblemBase]) -> type[ProblemBase]:
    name = kind_name(model)
    if name in PROBLEM_MODELS and PROBLEM_MODELS[name] is not model:
        raise ValueError(f"problem kind {name!r} is already registered")
    PROBLEM_MODELS[name] = model
    return model


for _model in (FillInProblem, ChoiceProblem, CodeProblem, ManualProblem):
    register_problem_model(_model)

Problem = Annotated[SerializeAsAny[ProblemBase], table_union(PROBLEM_MODELS, "problem")]


class ProblemSetSpec(_Model):
    id: str = Field(pattern=ID_PATTERN)
    title: str
    version: str = Field(default="1", description="the instructor's label; every upload also gets a number")
    description: str = ""
    language: str = "zh"
    due_at: datetime | None = None
    late_policy: LatePolicy = Field(default_factory=LatePolicy)
    show_explanations: Literal["after_grading", "after_due", "never"] = "after_grading"
    problems: list[Problem] = Field(min_length=1)

    @field_validator("due_at")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        # A due date without a zone is read as UTC, so comparisons with the clock never mix naive and aware times.
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value

    @model_validator(mode="after")
    def _unique_ids(self) -> ProblemSetSpec:
        ids = [p.id for p in self.problems]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"duplicate problem ids: {dup}")
        return self

    def problem(self, problem_id: str) -> ProblemBase | None:
        return next((p for p in self.problems if p.id == problem_id), None)
