"""Turn a submission row into what its viewer may see (visibility, due dates, explanations)."""

from __future__ import annotations

from datetime import datetime

from app.db import utcnow
from app.submissions.models import Status, Submission, final_score_of, round_score
from app.submissions.schemas import CheckPublic, SubmissionPublic, SubmissionSummary
from app.submissions.service import is_revealed
from graders.problemset.loader import LoadedSet


def submission_public(sub: Submission, loaded: LoadedSet, *, viewer_is_staff: bool) -> SubmissionPublic:
    spec = loaded.spec
    now = utcnow()
    checks: list[CheckPublic] = []
    sealed = 0
    for row in sub.checks:
        if is_revealed(row.visibility, viewer_is_staff=viewer_is_staff, due_at=spec.due_at, now=now):
            checks.append(
                CheckPublic(
                    name=row.name,
                    category=row.category,
                    passed=row.passed,
                    score=row.score,
                    max_score=row.max_score,
                    feedback=row.feedback,
                    visibility=row.visibility,
                    duration_ms=row.duration_ms,
                )
            )
        else:
            sealed += 1
            checks.append(
                CheckPublic(
                    name=row.name,
                    category=row.category,
                    passed=None,
                    score=None,
                    max_score=row.max_score,
                    feedback="result shown after the due date",
                    visibility=row.visibility,
                    duration_ms=0.0,
                )
            )
    grade = sub.grade
    graded = sub.status == Status.GRADED and grade is not None
    score = sum(c.score or 0.0 for c in checks) if graded else None
    explanation = None
    if graded and _explanations_open(spec.show_explanations, spec.due_at, now, viewer_is_staff):
        text = loaded.explanation(sub.problem_id)
        explanation = {"markdown": text} if text else None
    return SubmissionPublic(
        id=sub.id,
        status=sub.status,
        status_url=f"/api/v1/submissions/{sub.id}",
        problem_set=spec.id,
        problem=sub.problem_id,
        version=sub.problem_set_version.number,
        attempt=sub.attempt,
        source=sub.source,
        user_id=sub.user_id,
        created_at=sub.created_at,
        graded_at=sub.graded_at,
        score=round(score, 6) if score is not None else None,
        max_score=grade.max_score if graded and grade else None,
        manual_score=grade.manual_score if grade else None,
        manual_feedback=grade.manual_feedback if grade else None,
        # From the visible score, not grade.final_score: sealed checks must not show through the total.
        final_score=(
            round_score(final_score_of(score or 0.0, grade.manual_score, grade.late_penalty))
            if graded and grade
            else None
        ),
        late_penalty=grade.late_penalty if graded and grade else 0.0,
        # While results are sealed the verdict would give them away (all visible checks pass, verdict "partial").
        verdict=grade.verdict if graded and grade and not sealed else None,
        message=_SEALED if graded and sealed else (grade.message if graded and grade else _status_message(sub)),
        checks=checks,
        sealed_checks=sealed,
        explanation=explanation,
        error=sub.error if viewer_is_staff else None,
    )


def _explanations_open(policy: str, due_at: object, now: object, staff: bool) -> bool:
    if staff or policy == "after_grading":
        return True
    if policy == "after_due":
        return due_at is not None and now >= due_at  # type: ignore[operator]
    return False


def _status_message(sub: Submission) -> str:
    if sub.status == Status.ERROR:
        return "grading failed on our side (not your fault); an instructor can regrade it"
    if sub.status == Status.QUEUED and sub.grading_attempts:
        return "retrying after an internal grading error"
    return {"queued": "waiting for a grader", "running": "grading"}.get(sub.status, "")


def submission_summary(sub: Submission, *, viewer_is_staff: bool = False) -> SubmissionSummary:
    """A list row. Scores count only checks the viewer may see, as in the full view (checks must be loaded)."""
    grade = sub.grade
    spec_due = sub.problem_set_version.spec.get("due_at")
    due_at = datetime.fromisoformat(spec_due) if isinstance(spec_due, str) else None
    now = utcnow()
    hidden = [
        c for c in sub.checks if not is_revealed(c.visibility, viewer_is_staff=viewer_is_staff, due_at=due_at, now=now)
    ]
    final = None
    if grade is not None:
        visible_auto = grade.auto_score - sum(c.score for c in hidden)
        final = round_score(final_score_of(visible_auto, grade.manual_score, grade.late_penalty))
    return SubmissionSummary(
        id=sub.id,
        status=sub.status,
        problem_set=sub.problem_set_version.problem_set.slug,
        problem=sub.problem_id,
        attempt=sub.attempt,
        user_id=sub.user_id,
        created_at=sub.created_at,
        final_score=final,
        max_score=grade.max_score if grade else None,
        verdict=grade.verdict if grade and not hidden else None,
    )


_SEALED = "some results open after the due date"
