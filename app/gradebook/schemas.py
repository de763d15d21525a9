"""Response and request models of the gradebook endpoints (instructors only)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from app.safe_text import SafeStr


class ProblemColumn(BaseModel):
    id: str
    title: str
    kind: str
    max_score: float = Field(description="points of the problem at the set's latest version")


class GradeCell(BaseModel):
    best_score: float | None = Field(
        description="the counted final score (auto + manual, less the late penalty and attempt decay) of the attempt "
        "that counts under the assignment's policy (best or last); null if none"
    )
    max_score: float
    attempts: int = Field(description="every submission to this problem, graded or not")
    pending: int = Field(default=0, description="attempts still waiting for a grade")
    best_submission_id: int | None = None
    variant_seed: int | None = Field(
        default=None, description="the variant the counted attempt answered (a problem with parameters)"
    )


class StudentRow(BaseModel):
    user_id: int
    email: str
    display_name: str
    student_id: str = ""
    section: str = ""
    cells: dict[str, GradeCell] = Field(description="problem id -> cell")
    total: float = Field(description="sum of best scores; a problem without a graded attempt counts 0")
    max_total: float


class Gradebook(BaseModel):
    problem_set: str
    offering: int
    title: str
    version: int
    policy: str = Field(default="best", description="which attempt counts: best or last (the assignment's rule)")
    problems: list[ProblemColumn]
    students: list[StudentRow]


class CheckStat(BaseModel):
    name: str = Field(description="part id (b1, b2, ...) or check name")
    category: str
    results: int = Field(description="graded attempts that ran this check")
    passed: int
    pass_rate: float


class ScoreBin(BaseModel):
    low: float
    high: float = Field(description="scores from low up to (not including) high; the last bin also holds high")
    students: int


class WrongAnswer(BaseModel):
    answer: str | None = Field(
        description="the answer after the grader's normalisation (its first 200 characters); null for a caller who may "
        "not read submissions"
    )
    students: int = Field(description="students who gave this wrong answer at least once")
    accepted_now: bool | None = Field(
        default=None,
        description="whether the set's current version accepts it (added as an alias since): a regrade gives the "
        "points; null where that is not known (formula blanks, hidden answers)",
    )
    known_wrong: bool = Field(
        default=False, description="listed among the blank's known-wrong examples (reject) in the current version"
    )


class BlankWrongAnswers(BaseModel):
    part: str = Field(description="part id (b1, b2, ...)")
    wrong_students: int = Field(description="students with at least one wrong (non-empty) answer to this blank")
    top: list[WrongAnswer] = Field(description="the most common wrong answers, at most five, most students first")
    takes_aliases: bool = Field(
        default=False, description="a text blank in the current version: an instructor may accept one of these answers"
    )


class MutantLikeness(BaseModel):
    mutant: str = Field(description="the mutant's file name under mutants/<problem>/, e.g. subtracts.py")
    failed_checks: list[str] = Field(description="the checks it fails in the gate's matrix stored at upload")
    students: int = Field(description="students whose counted submission fails exactly these checks")


class VariantStats(BaseModel):
    seed: int = Field(description="the variant's seed, as the gradebook CSV's variant column gives it")
    params: dict[str, Any] = Field(description="the numbers this variant shows; empty where it is not stored")
    students_graded: int
    mean_best: float
    full_marks_fraction: float


class ParameterValueStats(BaseModel):
    name: str = Field(description="a parameter of the problem")
    value: str = Field(description="one of its values, as the prompt shows it")
    students_graded: int
    mean_best: float


class ProblemStats(BaseModel):
    id: str
    title: str
    max_score: float
    submissions: int
    students_attempted: int
    students_graded: int
    mean_best: float | None
    median_best: float | None
    full_marks_fraction: float | None = Field(description="share of graded students whose best attempt is full marks")
    checks: list[CheckStat] = Field(description="in the order the grader reports them; rubric rows left out")
    hardest_check: str | None = Field(description="the check with the lowest pass rate")
    histogram: list[ScoreBin] = Field(
        default_factory=list,
        description="the students' counted scores in bins from 0 to max_score, those awaiting hand grading left out",
    )
    pending_manual: int = Field(default=0, description="students whose counted attempt awaits hand grading")
    wrong_answers: list[BlankWrongAnswers] = Field(
        default_factory=list, description="per blank of an answers problem, in part order; empty for code problems"
    )
    variants: list[VariantStats] = Field(
        default_factory=list,
        description="a problem with parameters: the counted scores per variant, the lowest mean first; empty for "
        "one without",
    )
    by_parameter: list[ParameterValueStats] = Field(
        default_factory=list,
        description="a problem with parameters: the counted scores per value of each parameter with 2 to 10 values "
        "among the students (is a large T harder?), in parameter order",
    )
    mutants: list[MutantLikeness] = Field(
        default_factory=list,
        description="per mutant of a code problem's gate (as run at upload), how many students behave like it; "
        "empty where the gate did not run",
    )


class SetStats(BaseModel):
    problem_set: str
    offering: int
    title: str
    version: int
    problems: list[ProblemStats]


class AwaitingManual(BaseModel):
    submission_id: int
    user_id: int
    email: str
    problem: str
    attempt: int


class ManualGradeIn(BaseModel):
    manual_score: float = Field(ge=0, allow_inf_nan=False, description="at most the problem's rubric points")
    feedback: SafeStr = Field("", max_length=20_000)


class ManualGradePublic(BaseModel):
    submission_id: int
    auto_score: float
    manual_score: float | None
    final_score: float
    max_score: float
    manual_feedback: str | None
    manual_graded_by_id: int | None


class RegradePublic(BaseModel):
    id: int
    status: str
    status_url: str
