"""The one entry point of grading: grade a submission's payload, check a submission's input, validate a set, and
build the student view of a problem. The app's workers, its services and the offline CLI all come here; each
function asks the problem's kind (graders.kinds) what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from graders.answers.registry import answer_kind
from graders.code.grader import CodeGraderLike
from graders.kinds import GradeContext, Payload, ValidateContext, kind_of
from graders.model import ProblemBase
from graders.problemset.loader import LoadedSet
from graders.problemset.validate import ValidationReport
from graders.problemset.variant_gate import DEFAULT_DRAWS
from graders.problemset.variants import Variant, VariantSource, apply_variant, render_prompt
from graders.results import GradeResult


def grade_submission(
    loaded: LoadedSet,
    problem_id: str,
    payload: Payload,
    code_grader: Callable[[], CodeGraderLike],
    variant: Variant | None = None,
) -> GradeResult:
    """Grade a stored payload against a loaded set.

    Args:
        loaded: the set version the submission was made to.
        problem_id: the problem's id in that set.
        payload: what ``check_payload`` built when the submission was stored.
        code_grader: returns the code grader, built on first use (answer-only grading never starts a sandbox).
        variant: the submission's variant of a parameterised problem (its parts' answers replace the set's).

    Returns:
        The GradeResult. Raises LookupError for an unknown problem, SandboxError when the sandbox itself failed.
    """
    problem = loaded.spec.problem(problem_id)
    if problem is None:
        raise LookupError(f"problem {problem_id!r} is not in set {loaded.spec.id!r}")
    problem = apply_variant(problem, variant)
    return kind_of(problem).grade(problem, payload, GradeContext(root=loaded.root, code_grader=code_grader))


def check_payload(problem: ProblemBase, *, answers: dict[str, str] | None, code: str | None) -> Payload:
    """The payload to store for a submission's input; raises PayloadInvalid naming the field that is wrong."""
    return kind_of(problem).payload(problem, answers=answers, code=code)


def format_errors(problem: ProblemBase, payload: Payload) -> dict[str, str]:
    """Part id -> why its answer cannot be read at all (``sqrt(d_k``, a shape with a letter, an unknown unit).

    Such a submission is refused before it is stored and uses no attempt ("invalid format: not counted"). Code
    is never checked here: a syntax error is the student's program and counts.
    """
    answers = payload.get("answers")
    if not isinstance(answers, dict):
        return {}
    out: dict[str, str] = {}
    for part_id, part in zip(problem.part_ids(), problem.answer_parts(), strict=False):
        text = answers.get(part_id)
        check = answer_kind(part.kind).format_error
        if isinstance(text, str) and text.strip() and check is not None:
            reason = check(text, part)
            if reason is not None:
                out[part_id] = reason
    return out


def answer_key(problem: ProblemBase) -> dict[str, str]:
    """Part id -> the reference answer, as text (what a released answer key shows), as each part's kind writes it.
    Hand-scored parts have none."""
    out: dict[str, str] = {}
    for part_id, part in zip(problem.part_ids(), problem.answer_parts(), strict=False):
        key = answer_kind(part.kind).released_key(part)
        if key:
            out[part_id] = key
    return out


def validate_set(
    loaded: LoadedSet,
    *,
    code_grader: CodeGraderLike | None,
    progress: Callable[[str], None] | None = None,
    max_grading_s: float | None = None,
    only: Collection[str] | None = None,
    variants: VariantSource | None = None,
    variant_draws: int = DEFAULT_DRAWS,
) -> ValidationReport:
    """Check every accept/reject case and (with a grader) run every code problem's solutions and mutants.

    ``max_grading_s``: the longest the service lets one grading run (its lease); code problems whose checks could
    take longer are refused. ``variants`` runs the generators of parameterised problems (the set's checker), whose
    gate draws ``variant_draws`` variants; without it they are noted as not checked. ``only``: these problem ids
    alone (a code problem's points import its checks, and so
    torch: showing one answer problem of a set should not).
    """
    report = ValidationReport()
    for index, problem in enumerate(loaded.spec.problems):
        if only is not None and problem.id not in only:
            continue
        where = f"problems[{index}] ({problem.id})"
        context = ValidateContext(
            loaded, where, report, code_grader, progress, max_grading_s, variants=variants, variant_draws=variant_draws
        )
        kind_of(problem).validate(problem, context)
    return report


def problem_view(
    problem: ProblemBase, loaded: LoadedSet, points: float | None, variant: Variant | None = None
) -> dict[str, Any]:
    """What a student may see of a problem: prompt (with the viewer's ``variant``), parts with their kinds and
    hints, points, rubric."""
    problem = apply_variant(problem, variant)
    kind = kind_of(problem)
    return {
        "id": problem.id,
        "title": problem.title,
        "kind": problem.kind,
        "takes": kind.takes,
        "prompt": render_prompt(loaded.prompt(problem.id), variant),
        "points": points,
        "rubric": [{"id": r.id, "points": r.points, "description": r.description} for r in problem.rubric],
        **kind.view(problem),
    }
