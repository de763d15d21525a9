"""The pieces of validating a set before students see it: the report, answer accept/reject cases, the code gate.

graders.grade.validate_set asks each problem's kind (graders.kinds) to run the pieces that apply to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from graders.answers import grade_part
from graders.code.grader import CodeGraderLike, grading_budget_s
from graders.model import CodeProblem, ProblemBase
from graders.problemset.errors import SetError
from graders.problemset.loader import SET_FILE, LoadedSet
from graders.problemset.mutant_gate import run_mutant_gate
from graders.problemset.variants import prompt_names


@dataclass
class ValidationReport:
    """Everything an instructor needs to trust the set: errors, points per problem, per-case and gate results."""

    errors: list[SetError] = field(default_factory=list)
    points: dict[str, float] = field(default_factory=dict)
    answer_cases: int = 0
    gates: dict[str, dict[str, Any]] = field(default_factory=dict)
    gate_texts: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Problem id -> the parts its generator rewrites in the variants the gate drew (their keys differ per student).
    variant_parts: dict[str, list[str]] = field(default_factory=dict)

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
            "variant_parts": self.variant_parts,
        }

    def render_text(self) -> str:
        lines = [f"{'OK' if self.ok else 'INVALID'}: {self.answer_cases} answer cases checked"]
        lines += [f"  error: {e}" for e in self.errors]
        lines += [f"  note: {n}" for n in self.notes]
        for problem_id, text in self.gate_texts.items():
            lines += ["", f"mutant gate of {problem_id}:", text]
        return "\n".join(lines)


def check_answer_cases(problem: ProblemBase, where: str, report: ValidationReport) -> None:
    """Every part's ``accept:`` cases must be accepted and its ``reject:`` cases rejected. A case of a problem with
    parameters that names one (``{%T%}*{%d%}``) is checked by the variant gate on every variant it draws instead."""
    for part_id, spec in zip(problem.part_ids(), problem.answer_parts(), strict=True):
        for expected, cases in ((True, spec.accept), (False, spec.reject)):
            for case in cases:
                if problem.generator is not None and prompt_names(case):
                    continue
                report.answer_cases += 1
                result = grade_part(case, spec)
                if result.correct != expected:
                    verb = "accept" if expected else "reject"
                    report.errors.append(
                        SetError(
                            SET_FILE, f"{where}.{part_id}.{verb}", f"{case!r} should be {verb}ed: {result.feedback}"
                        )
                    )


def validate_code(
    loaded: LoadedSet,
    problem: CodeProblem,
    where: str,
    grader: CodeGraderLike | None,
    report: ValidationReport,
    progress: Callable[[str], None] | None,
    max_grading_s: float | None = None,
) -> None:
    """Import the checks (in the set's jailed checker), count their points, check their budget, run the mutant gate.

    ``max_grading_s`` is the longest a grading may take in the service (its workers' grading lease): a problem
    whose checks may run longer is refused, so that no grading can outlive its lease.
    """
    if not problem.gradable:
        report.notes.append(f"{problem.id}: not gradable yet (no checks); students see it but cannot submit")
        return
    if grader is None:  # the set's code is imported only in a jailed checker, which a grader starts
        report.notes.append(f"{problem.id}: checks not imported (no code grader), so neither counted nor gated")
        return
    try:
        checks = grader.checks(loaded.root, problem.checks)
    except Exception as exc:  # instructor code: any failure to import is a validation error, not a crash
        report.errors.append(SetError(problem.checks, "", f"cannot import checks: {type(exc).__name__}: {exc}"))
        return
    if not checks:
        report.errors.append(SetError(problem.checks, "", "defines no @check functions"))
        return
    report.points[problem.id] = sum(c.points for c in checks)
    budget = grading_budget_s(problem, checks)
    if max_grading_s is not None and budget > max_grading_s:
        report.errors.append(
            SetError(
                SET_FILE,
                f"{where}.limits",
                f"one grading may take up to {budget:g} s (limits.time_s to load, plus every check's timeout_s), "
                f"longer than the {max_grading_s:g} s the service allows a grading (its grading lease): lower the "
                "checks' timeouts, or raise the lease",
            )
        )
        return
    try:
        gate = run_mutant_gate(problem, loaded.root, grader, progress)
    except Exception as exc:  # the sandbox could not run (no bubblewrap, no privileges): say so, store nothing
        report.errors.append(
            SetError(problem.checks, "", f"could not run the mutant gate: {type(exc).__name__}: {exc}"[:1000])
        )
        return
    report.gates[problem.id] = gate.to_dict()
    report.gate_texts[problem.id] = gate.render_text()
    report.notes += [f"{problem.id}: warning: {warning}" for warning in gate.warnings]
    report.errors += [SetError(SET_FILE, f"{where}.mutant_gate", reason) for reason in gate.problems]
