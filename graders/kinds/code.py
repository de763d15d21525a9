"""The code kind: a submission is a Python file, graded in the sandbox against the problem's trusted checks."""

from __future__ import annotations

from typing import Any

from graders.kinds.base import (
    GradeContext,
    Payload,
    PayloadInvalid,
    ProblemKind,
    ValidateContext,
    register_problem_kind,
    rubric_points,
)
from graders.model import CodeProblem
from graders.problemset.validate import validate_code
from graders.results import GradeResult


class CodeKind(ProblemKind):
    model = CodeProblem
    takes = "code"

    def payload(self, problem: CodeProblem, *, answers: dict[str, str] | None, code: str | None) -> Payload:
        if code is None:
            raise PayloadInvalid(
                f"problem {problem.id!r} is a code problem: send 'code' (or upload a .py file)", "code"
            )
        if not problem.gradable:
            raise PayloadInvalid(f"problem {problem.id!r} does not accept submissions yet", field="problem")
        if len(code.encode()) > problem.limits.source_kb * 1024:
            raise PayloadInvalid(f"source is larger than {problem.limits.source_kb} KiB", field="code")
        return {"code": code}

    def grade(self, problem: CodeProblem, payload: Payload, ctx: GradeContext) -> GradeResult:
        # Imported in the set's jailed checker, never here; the grader caches them per file (workers grade from
        # version folders named by their content hash, so a file's checks never change underneath the cache).
        grader = ctx.code_grader()
        checks = grader.checks(ctx.root, problem.checks)
        return grader.grade(source=str(payload["code"]), problem=problem, checks=checks)

    def validate(self, problem: CodeProblem, ctx: ValidateContext) -> None:
        validate_code(ctx.loaded, problem, ctx.where, ctx.code_grader, ctx.report, ctx.progress, ctx.max_grading_s)
        ctx.report.points[problem.id] = ctx.report.points.get(problem.id, 0.0) + rubric_points(problem)

    def view(self, problem: CodeProblem) -> dict[str, Any]:
        return {
            "entrypoints": problem.entrypoints,
            "gradable": problem.gradable,
            "limits": problem.limits.model_dump(),
            "parts": [],
        }


register_problem_kind(CodeKind())
