"""Gradebook (JSON and CSV), per-question statistics, regrades and manual grades: instructors only."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response

from app.deps import InstructorUser, RowId, SessionDep
from app.error_format import error_responses
from app.gradebook import service
from app.gradebook.schemas import Gradebook, ManualGradeIn, ManualGradePublic, RegradePublic, SetStats
from app.gradebook.stats import set_stats

router = APIRouter(tags=["gradebook"])


def _csv_response(book: Gradebook) -> Response:
    return Response(
        service.to_csv(book),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="gradebook-{book.problem_set}.csv"'},
    )


# Declared before "/gradebook/{set_slug}", which would otherwise take "basic.csv" as a slug.
@router.get("/gradebook/{set_slug}.csv", response_class=Response, responses={200: {"content": {"text/csv": {}}}})
def gradebook_csv(set_slug: str, user: InstructorUser, session: SessionDep) -> Response:
    """The gradebook as CSV: email, display name, one column per problem (best score), total."""
    return _csv_response(service.gradebook(session, slug=set_slug))


@router.get("/gradebook/{set_slug}", response_model=Gradebook, responses={200: {"content": {"text/csv": {}}}})
def get_gradebook(
    set_slug: str, user: InstructorUser, session: SessionDep, format: Literal["json", "csv"] = "json"
) -> Gradebook | Response:
    """Best final score, max score and attempts per student and problem, with totals (?format=csv for CSV)."""
    book = service.gradebook(session, slug=set_slug)
    return _csv_response(book) if format == "csv" else book


@router.get("/gradebook/{set_slug}/stats", response_model=SetStats)
def get_stats(set_slug: str, user: InstructorUser, session: SessionDep) -> SetStats:
    """Per-question statistics: attempts, best-score mean/median, full marks, and each check's pass rate."""
    return set_stats(session, slug=set_slug)


@router.post("/submissions/{submission_id}/regrade", status_code=202, response_model=RegradePublic)
def regrade(submission_id: RowId, request: Request, user: InstructorUser, session: SessionDep) -> RegradePublic:
    """Requeue a submission for grading; a worker replaces its checks and grade."""
    sub = service.regrade(session, submission_id=submission_id)
    request.app.state.dispatch(sub.id)
    return RegradePublic(id=sub.id, status=sub.status, status_url=f"/api/v1/submissions/{sub.id}")


@router.post(
    "/submissions/{submission_id}/manual-grade", response_model=ManualGradePublic, responses=error_responses(409)
)
def manual_grade(
    submission_id: RowId, body: ManualGradeIn, user: InstructorUser, session: SessionDep
) -> ManualGradePublic:
    """Set the hand-scored part of a grade (0 to the problem's rubric points) and the instructor's feedback."""
    grade, _ = service.manual_grade(
        session, submission_id=submission_id, grader=user, manual_score=body.manual_score, feedback=body.feedback
    )
    return ManualGradePublic(
        submission_id=submission_id,
        auto_score=grade.auto_score,
        manual_score=grade.manual_score,
        final_score=grade.final_score,
        max_score=grade.max_score,
        manual_feedback=grade.manual_feedback,
        manual_graded_by_id=grade.manual_graded_by_id,
    )
