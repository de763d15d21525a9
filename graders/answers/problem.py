"""Grade a whole fill-in, choice or manual problem: one check per part, named by its part id."""

from __future__ import annotations

import time

from graders.answers import grade_part
from graders.problemset.schema import ChoiceProblem, FillInProblem, ManualProblem
from graders.results import CheckResult, GradeResult, Verdict, Visibility, verdict_from_checks

AnswerProblem = FillInProblem | ChoiceProblem | ManualProblem
MAX_ANSWER_CHARS = 10_000


def answer_errors(problem: AnswerProblem, answers: dict[str, str]) -> list[str]:
    """What is wrong with the shape of an answers map (unknown parts, too long); empty when it is usable."""
    valid = problem.part_ids()
    errors = [f"unknown part {key!r}; this problem has parts {valid}" for key in answers if key not in valid]
    errors += [
        f"part {key!r} is longer than {MAX_ANSWER_CHARS} characters"
        for key, value in answers.items()
        if len(value) > MAX_ANSWER_CHARS
    ]
    return errors


def grade_answers(problem: AnswerProblem, answers: dict[str, str]) -> GradeResult:
    """Grade every part (a missing part scores 0) and list the rubric items as awaiting manual grading.

    Args:
        problem: a fill-in, choice or manual problem of a loaded set.
        answers: part id -> the student's text.

    Returns:
        One check per part (category "answer", or "manual" for essays) plus one per rubric item.
    """
    checks: list[CheckResult] = []
    parts = problem.parts if not isinstance(problem, ManualProblem) else []
    for part_id, spec in zip(problem.part_ids(), parts, strict=False):
        submitted = answers.get(part_id, "")
        if spec.kind == "essay":
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
