"""Validate a loaded set before students see it: answer accept/reject cases, and the code mutant gate."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from graders.answers import grade_part
from graders.code.checks import CheckSpec, load_checks
from graders.problemset.errors import SetError
from graders.problemset.loader import SET_FILE, LoadedSet
from graders.problemset.schema import ChoiceProblem, CodeProblem, FillInProblem
from graders.results import GradeResult


class CodeGraderLike(Protocol):
    def grade(self, *, source: str, problem: CodeProblem, checks: list[CheckSpec]) -> GradeResult: ...


@dataclass
class ValidationReport:
    """Everything an instructor needs to trust the set: errors, points per problem, per-case and gate results."""

    errors: list[SetError] = field(default_factory=list)
    points: dict[str, float] = field(default_factory=dict)
    answer_cases: int = 0
    gates: dict[str, dict[str, Any]] = field(default_factory=dict)
    gate_texts: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "errors": [e.to_dict() for e in self.errors],
            "points": self.points,
            "answer_cases_checked": self.answer_cases,
            "mutant_gates": self.gates,
            "notes": self.notes,
        }

    def render_text(self) -> str:
        lines = [f"{'OK' if self.ok else 'INVALID'}: {self.answer_cases} answer cases checked"]
        lines += [f"  error: {e}" for e in self.errors]
        lines += [f"  note: {n}" for n in self.notes]
        for problem_id, text in self.gate_texts.items():
            lines += ["", f"mutant gate of {problem_id}:", text]
        return "\n".join(lines)


def validate_set(
    loaded: LoadedSet, *, code_grader: CodeGraderLike | None, progress: Callable[[str], None] | None = None
) -> ValidationReport:
    """Check every accept/reject case and (with a grader) run every code problem's solutions and mutants."""
    report = ValidationReport()
    for index, problem in enumerate(loaded.spec.problems):
        where = f"problems[{index}] ({problem.id})"
        rubric = sum(item.points for item in problem.rubric)
        if isinstance(problem, FillInProblem | ChoiceProblem):
            report.points[problem.id] = sum(p.points for p in problem.parts) + rubric
            _check_cases(problem, where, report)
        elif isinstance(problem, CodeProblem):
            _validate_code(loaded, problem, where, code_grader, report, progress)
            report.points[problem.id] = report.points.get(problem.id, 0.0) + rubric
        else:
            report.points[problem.id] = rubric
    return report


def _check_cases(problem: FillInProblem | ChoiceProblem, where: str, report: ValidationReport) -> None:
    for part_id, spec in zip(problem.part_ids(), problem.parts, strict=True):
        for expected, cases in ((True, spec.accept), (False, spec.reject)):
            for case in cases:
                report.answer_cases += 1
                result = grade_part(case, spec)
                if result.correct != expected:
                    verb = "accept" if expected else "reject"
                    report.errors.append(
                        SetError(
                            SET_FILE, f"{where}.{part_id}.{verb}", f"{case!r} should be {verb}ed: {result.feedback}"
                        )
                    )


def _validate_code(
    loaded: LoadedSet,
    problem: CodeProblem,
    where: str,
    grader: CodeGraderLike | None,
    report: ValidationReport,
    progress: Callable[[str], None] | None,
) -> None:
    if not problem.gradable:
        report.notes.append(f"{problem.id}: not gradable yet (no checks); students see it but cannot submit")
        return
    try:
        checks = load_checks(loaded.root / problem.checks)
    except Exception as exc:  # instructor code: any failure to import is a validation error, not a crash
        report.errors.append(SetError(problem.checks, "", f"cannot import checks: {type(exc).__name__}: {exc}"))
        return
    if not checks:
        report.errors.append(SetError(problem.checks, "", "defines no @check functions"))
        return
    report.points[problem.id] = sum(c.points for c in checks)
    if grader is None:
        report.notes.append(f"{problem.id}: mutant gate not run (no code grader)")
        return
    from graders.problemset.mutant_gate import run_mutant_gate

    try:
        gate = run_mutant_gate(problem, loaded.root, grader, progress)
    except Exception as exc:  # the sandbox could not run (no bubblewrap, no privileges): say so, store nothing
        report.errors.append(
            SetError(problem.checks, "", f"could not run the mutant gate: {type(exc).__name__}: {exc}"[:1000])
        )
        return
    report.gates[problem.id] = gate.to_dict()
    report.gate_texts[problem.id] = gate.render_text()
    report.errors += [SetError(SET_FILE, f"{where}.mutant_gate", reason) for reason in gate.problems]
