"""Kinds whose submissions are answers to parts: fill-in (blanks), choice (one part, b1) and manual (an essay, b1).

Each part is graded by the answer kind its spec names (graders.answers.registry); rubric items are listed as
awaiting manual grading.
"""

from __future__ import annotations

import time
from typing import Any

from graders.answers.normalize import MAX_ANSWER_CHARS
from graders.answers.registry import ANSWER_KINDS, grade_part
from graders.answers.specs import AnswerSpec
from graders.kinds.base import (
    GradeContext,
    Payload,
    PayloadInvalid,
    ProblemKind,
    ValidateContext,
    register_problem_kind,
    rubric_points,
)
from graders.model import ChoiceProblem, FillInProblem, ManualProblem, ProblemBase
from graders.problemset.validate import check_answer_cases
from graders.problemset.variant_gate import check_variants
from graders.results import CheckResult, GradeResult, Verdict, Visibility, verdict_from_checks


def answer_errors(problem: ProblemBase, answers: dict[str, str]) -> list[str]:
    """What is wrong with the shape of an answers map (unknown parts, too long); empty when it is usable."""
    valid = problem.part_ids()
    errors = [f"unknown part {key!r}; this problem has parts {valid}" for key in answers if key not in valid]
    errors += [
        f"part {key!r} is longer than {MAX_ANSWER_CHARS} characters"
        for key, value in answers.items()
        if len(value) > MAX_ANSWER_CHARS
    ]
    return errors


def grade_answers(problem: ProblemBase, parts: list[AnswerSpec], answers: dict[str, str]) -> GradeResult:
    """Grade every part (a missing part scores 0) and list the rubric items as awaiting manual grading.

    Args:
        problem: a fill-in, choice or manual problem of a loaded set.
        parts: the problem's automatically handled parts, in part-id order.
        answers: part id -> the student's text.

    Returns:
        One check per part (category "answer", or "manual" for parts scored by hand) plus one per rubric item.
    """
    checks: list[CheckResult] = []
    for part_id, spec in zip(problem.part_ids(), parts, strict=False):
        submitted = answers.get(part_id, "")
        if not ANSWER_KINDS[spec.kind].auto:
            checks.append(_manual(part_id, "written answer received" if submitted.strip() else "no answer given"))
            continue
        started = time.perf_counter()
        result = grade_part(submitted, spec)
        checks.append(
            CheckResult(
                name=part_id,
                category="answer",
                passed=result.correct,
                score=round(result.score * spec.points, 6),
                max_score=spec.points,
                feedback=result.feedback,
                visibility=Visibility.VISIBLE,
                duration_ms=round((time.perf_counter() - started) * 1000, 3),
            )
        )
    for item in problem.rubric:
        checks.append(
            CheckResult(
                name=f"rubric:{item.id}",
                category="manual",
                passed=False,
                score=0.0,
                max_score=item.points,
                feedback=f"awaiting manual grading: {item.description}",
            )
        )
    pending = bool(problem.rubric)
    auto = [c for c in checks if c.category == "answer"]
    verdict = verdict_from_checks(auto, pending_manual=pending) if auto or pending else Verdict.WRONG_ANSWER
    return GradeResult(verdict=verdict, checks=checks)


def _manual(name: str, feedback: str) -> CheckResult:
    return CheckResult(name=name, category="manual", passed=False, score=0.0, max_score=0.0, feedback=feedback)


def part_view(part_id: str, spec: AnswerSpec) -> dict[str, Any]:
    kind = ANSWER_KINDS[spec.kind]
    return {
        "id": part_id,
        "kind": spec.kind,
        "points": spec.points,
        "hint": kind.hint_for(spec),
        "widget": kind.widget,
        **kind.view(spec),
    }


class AnswersKind(ProblemKind):
    """A kind whose submission answers its parts (``answer_parts()``), each graded by the part's answer kind; the
    base of the built-in answer kinds and of a new one (docs/extending.md)."""

    takes = "answers"
    # Pure graders over short strings; a symbolic part that the numeric check cannot decide goes to the bounded
    # SymPy worker pool, which has its own time limit.
    grades_in_process = True

    def parts(self, problem: ProblemBase) -> list[AnswerSpec]:
        """The parts that are graded part by part."""
        return problem.answer_parts()

    def payload(self, problem: Any, *, answers: dict[str, str] | None, code: str | None) -> Payload:
        if code is not None:
            raise PayloadInvalid(f"problem {problem.id!r} takes 'answers', not code", field="code")
        if answers is None:
            raise PayloadInvalid(f"problem {problem.id!r} takes 'answers': a map from part id to text", "answers")
        errors = answer_errors(problem, answers)
        if errors:
            raise PayloadInvalid("; ".join(errors), field="answers")
        return {"answers": answers}

    def grade(self, problem: Any, payload: Payload, ctx: GradeContext) -> GradeResult:
        answers = payload.get("answers")
        return grade_answers(problem, self.parts(problem), answers if isinstance(answers, dict) else {})

    def validate(self, problem: Any, ctx: ValidateContext) -> None:
        ctx.report.points[problem.id] = sum(p.points for p in self.parts(problem)) + rubric_points(problem)
        check_answer_cases(problem, ctx.where, ctx.report)
        check_variants(ctx.loaded, problem, ctx.where, ctx.variants, ctx.report, ctx.variant_draws)

    def view(self, problem: Any) -> dict[str, Any]:
        return {
            "parts": [
                part_view(pid, spec) for pid, spec in zip(problem.part_ids(), problem.answer_parts(), strict=True)
            ]
        }


class FillInKind(AnswersKind):
    model = FillInProblem
    takes_aliases = True


class ChoiceKind(AnswersKind):
    model = ChoiceProblem

    def view(self, problem: Any) -> dict[str, Any]:
        return super().view(problem) | {"options": problem.options}


class ManualKind(AnswersKind):
    """One essay (b1) scored by hand against the rubric: nothing is graded part by part."""

    model = ManualProblem
    _ESSAY = ANSWER_KINDS["essay"].spec(kind="essay")

    def parts(self, problem: Any) -> list[AnswerSpec]:
        return []

    def validate(self, problem: Any, ctx: ValidateContext) -> None:
        ctx.report.points[problem.id] = rubric_points(problem)

    def view(self, problem: Any) -> dict[str, Any]:
        return {"parts": [part_view("b1", self._ESSAY)]}


for _kind in (FillInKind(), ChoiceKind(), ManualKind()):
    register_problem_kind(_kind)
