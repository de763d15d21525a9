"""Turn a submission row into what its viewer may see: check visibility, the release policy (Seal), explanations."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.orm import object_session

from app.db import utcnow
from app.problemsets.variants import cached
from app.submissions.models import CheckResultRow, Status, Submission, final_score_of, round_score
from app.submissions.notebook import is_notebook_source, left_out_notice, with_cells
from app.submissions.release import Seal
from app.submissions.schemas import CheckPublic, SubmissionPublic, SubmissionSummary
from graders.grade import answer_key
from graders.model import ProblemBase
from graders.problemset.likeness import behaves_like, failure_vector
from graders.problemset.loader import LoadedSet
from graders.problemset.variants import Variant, apply_variant, render_prompt
from graders.words import parse_words


def is_revealed(visibility: str, *, seal: Seal, now: datetime) -> bool:
    """Whether a check's outcome is shown: "after_due" checks stay sealed until the viewer's due date.

    Feedback is student-safe by construction (checks never print hidden inputs unless marked visible), so visible
    and hidden checks are both reported.
    """
    if seal.staff or visibility != "after_due":
        return True
    return seal.due_at is not None and now >= seal.due_at


def _check(r: CheckResultRow, *, open_: bool, seal: Seal, source: str | None, names: set[str]) -> CheckPublic:
    if not open_:
        return CheckPublic(
            name=r.name,
            category=r.category,
            passed=None,
            score=None,
            max_score=r.max_score,
            feedback="result shown after the due date",
            visibility=r.visibility,
            duration_ms=0.0,
            words=None,
        )
    return CheckPublic(
        name=r.name,
        category=r.category,
        passed=r.passed if seal.scores else None,
        score=r.score if seal.scores else None,
        max_score=r.max_score,
        # A notebook's feedback cites "cell 7, line 3" rather than a line of the joined source.
        feedback=(with_cells(r.feedback, source) if source else r.feedback) if seal.feedback else _FEEDBACK_LATER,
        # The words say what the text says; where the text was rewritten (a notebook's cells), the text alone.
        words=_words(r, source, names) if seal.feedback else None,
        visibility=r.visibility,
        # How long a hidden check ran is a channel: a sleep chosen from a hidden input reads back ~10 bits a check.
        duration_ms=r.duration_ms if r.visibility == "visible" or seal.staff else 0.0,
    )


def _variant_lost(sub: Submission, problem: ProblemBase) -> bool:
    """A parameterised submission whose variant is not stored: show no key rather than the set's own numbers'."""
    return sub.variant_seed is not None and problem.generator is not None and _variant(sub, problem) is None


def _variant(sub: Submission, problem: ProblemBase) -> Variant | None:
    """The submission's variant as stored when it was made or graded (read back, never generated here)."""
    session = object_session(sub)
    if sub.variant_seed is None or problem.generator is None or session is None:
        return None
    return cached(session, sub.problem_set_version_id, problem, sub.variant_seed)


def submission_public(sub: Submission, loaded: LoadedSet, *, seal: Seal) -> SubmissionPublic:
    spec = loaded.spec
    now = utcnow()
    checks: list[CheckPublic] = []
    sealed = 0
    names = {row.name for row in sub.checks}
    for row in sub.checks:
        open_ = is_revealed(row.visibility, seal=seal, now=now)
        sealed += not open_
        checks.append(_check(row, open_=open_, seal=seal, source=_code_of(sub), names=names))
    grade = sub.grade
    graded = sub.status == Status.GRADED and grade is not None
    scored = graded and seal.scores
    score = sum(c.score or 0.0 for c in checks) if scored else None
    explanation = None
    if graded and seal.explanation:
        text = loaded.explanation(sub.problem_id)
        problem_now = spec.problem(sub.problem_id)
        if text and problem_now is not None:
            text = None if _variant_lost(sub, problem_now) else render_prompt(text, _variant(sub, problem_now))
        explanation = {"markdown": text} if text else None
    problem = spec.problem(sub.problem_id)
    key = None
    if graded and seal.answer_key and problem is not None and not _variant_lost(sub, problem):
        key = answer_key(apply_variant(problem, _variant(sub, problem)))  # the key of the submission's own variant
    hidden = bool(sealed) or not seal.scores
    return SubmissionPublic(
        id=sub.id,
        status=sub.status,
        status_url=f"/api/v1/submissions/{sub.id}",
        problem_set=spec.id,
        problem=sub.problem_id,
        version=sub.problem_set_version.number,
        attempt=sub.attempt,
        offering=sub.assignment.offering_id if sub.assignment else None,
        source=sub.source,
        user_id=sub.user_id,
        created_at=sub.created_at,
        graded_at=sub.graded_at,
        score=round(score, 6) if score is not None else None,
        max_score=grade.max_score if graded and grade else None,
        manual_score=grade.manual_score if grade and seal.scores else None,
        manual_feedback=grade.manual_feedback if grade and seal.feedback else None,
        # From the visible score, not grade.final_score: sealed checks must not show through the total.
        final_score=(
            round_score(final_score_of(score or 0.0, grade.manual_score, grade.late_penalty, grade.attempt_decay))
            if scored and grade
            else None
        ),
        late_penalty=grade.late_penalty if graded and grade else 0.0,
        attempt_decay=grade.attempt_decay if graded and grade else 0.0,
        # While results are sealed the verdict would give them away (all visible checks pass, verdict "partial").
        verdict=grade.verdict if graded and grade and not hidden else None,
        message=_message(sub, sealed, seal, hidden),
        checks=checks,
        sealed_checks=sealed,
        explanation=explanation,
        bug_hint=_bug_hint(sub, problem) if graded and seal.feedback and not hidden else None,
        answer_key=key,
        error=sub.error if seal.staff else None,
    )


def _bug_hint(sub: Submission, problem: object) -> dict[str, str] | None:
    """The instructor's words for the known mistake this submission behaves like (graders.problemset.likeness, the
    statistics page's matcher), or None. Only called when every check's outcome is already shown to the viewer: the
    hint then says nothing the checks do not, and never names a hidden input."""
    hints = getattr(problem, "bug_hints", None) or {}
    report = sub.problem_set_version.validation_report or {}
    gate = report.get("mutant_gates", {}).get(sub.problem_id) if hints else None
    if not gate:
        return None
    vector = failure_vector(((r.name, r.passed) for r in sub.checks if r.category != _NOT_A_CHECK), gate)
    for mutant in behaves_like(gate, vector):
        if mutant in hints:
            words = hints[mutant]
            return {"en": words} if isinstance(words, str) else dict(words)
    return None


_NOT_A_CHECK = "manual"  # a rubric row, not a check of the gate's matrix (as in app.gradebook.stats)


def _words(r: CheckResultRow, source: str | None, names: set[str]) -> dict[str, Any] | None:
    if source is not None and is_notebook_source(source):
        return None
    words = parse_words(r.words)  # checked again: what a checker sent, stored
    if words is None or words.english() != r.feedback:
        return None
    wire = words.to_wire()
    # ``needs`` is not in the English text: only the name of another check of this submission may pass, never a
    # string a check made up (it could carry a hidden input).
    if wire.get("needs") not in names or wire.get("needs") == r.name:
        wire.pop("needs", None)
    return wire


def _code_of(sub: Submission) -> str | None:
    code = sub.payload.get("code") if isinstance(sub.payload, dict) else None
    return code if isinstance(code, str) else None


def _message(sub: Submission, sealed: int, seal: Seal, hidden: bool) -> str:
    graded = sub.status == Status.GRADED and sub.grade is not None
    if graded and hidden:
        message = _SEALED if sealed and seal.scores else _SCORES_LATER
    else:
        message = sub.grade.message if graded and sub.grade else _status_message(sub)
    code = _code_of(sub)
    notice = left_out_notice(code) if code else None  # a notebook's IPython lines (%time, !pip) were not graded
    return f"{message} {notice}".strip() if notice else message


def _status_message(sub: Submission) -> str:
    if sub.status == Status.ERROR:
        return "grading failed on our side (not your fault); an instructor can regrade it"
    if sub.status == Status.QUEUED and sub.grading_attempts:
        return "retrying after an internal grading error"
    return {"queued": "waiting for a grader", "running": "grading"}.get(sub.status, "")


def submission_summary(sub: Submission, *, seal: Seal) -> SubmissionSummary:
    """A list row. Scores count only checks the viewer may see, as in the full view (checks must be loaded)."""
    grade = sub.grade
    now = utcnow()
    hidden = [c for c in sub.checks if not is_revealed(c.visibility, seal=seal, now=now)]
    final = None
    if grade is not None and seal.scores:
        visible_auto = grade.auto_score - sum(c.score for c in hidden)
        final = round_score(final_score_of(visible_auto, grade.manual_score, grade.late_penalty, grade.attempt_decay))
    return SubmissionSummary(
        id=sub.id,
        status=sub.status,
        problem_set=sub.problem_set_version.problem_set.slug,
        problem=sub.problem_id,
        attempt=sub.attempt,
        offering=sub.assignment.offering_id if sub.assignment else None,
        user_id=sub.user_id,
        created_at=sub.created_at,
        final_score=final,
        max_score=grade.max_score if grade else None,
        verdict=grade.verdict if grade and not hidden and seal.scores else None,
    )


_SEALED = "some results open after the due date"
_SCORES_LATER = "submitted and graded; scores are released later under this assignment's policy"
_FEEDBACK_LATER = "feedback is released later under this assignment's policy"
