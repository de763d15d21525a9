"""Gradebook (JSON and CSV) and per-question statistics per offering (staff and observers), regrades and manual
grades (staff of the submission's offering)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Request, Response

from app.deps import InstructorUser, PrincipalDep, RowId, RowIdQuery, SessionDep
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
def gradebook_csv(set_slug: str, principal: PrincipalDep, session: SessionDep, offering: RowIdQuery = None) -> Response:
    """The gradebook as CSV: email, display name, student id, section, one column per problem (counted score),
    total. Staff and observers of the offering only."""
    return _csv_response(service.gradebook(session, access=principal.access, slug=set_slug, offering_id=offering))


@router.get("/gradebook/{set_slug}", response_model=Gradebook, responses={200: {"content": {"text/csv": {}}}})
def get_gradebook(
    set_slug: str,
    principal: PrincipalDep,
    session: SessionDep,
    format: Literal["json", "csv"] = "json",
    offering: RowIdQuery = None,
) -> Gradebook | Response:
    """Counted final score, max score and attempts per student of the offering and problem, with totals
    (?format=csv for CSV). Staff and observers of the offering only; ``offering`` when the set is in several."""
    book = service.gradebook(session, access=principal.access, slug=set_slug, offering_id=offering)
    return _csv_response(book) if format == "csv" else book


@router.get("/gradebook/{set_slug}/stats", response_model=SetStats)
def get_stats(set_slug: str, principal: PrincipalDep, session: SessionDep, offering: RowIdQuery = None) -> SetStats:
    """Per-question statistics of the offering's students: attempts, counted-score mean/median, full marks, and
    each check's pass rate."""
    return set_stats(session, access=principal.access, slug=set_slug, offering_id=offering)


@router.post("/submissions/{submission_id}/regrade", status_code=202, response_model=RegradePublic)
def regrade(
    submission_id: RowId, request: Request, user: InstructorUser, principal: PrincipalDep, session: SessionDep
) -> RegradePublic:
    """Requeue a submission for grading (staff of its offering); a worker replaces its checks and grade."""
    sub = service.regrade(session, access=principal.access, submission_id=submission_id)
    request.app.state.dispatch(sub.id)
    return RegradePublic(id=sub.id, status=sub.status, status_url=f"/api/v1/submissions/{sub.id}")


@router.post(
    "/submissions/{submission_id}/manual-grade", response_model=ManualGradePublic, responses=error_responses(409)
)
def manual_grade(
    submission_id: RowId, body: ManualGradeIn, user: InstructorUser, principal: PrincipalDep, session: SessionDep
) -> ManualGradePublic:
    """Set the hand-scored part of a grade (0 to the problem's rubric points) and the instructor's feedback (staff
    of the submission's offering)."""
    grade, _ = service.manual_grade(
        session,
        access=principal.access,
        submission_id=submission_id,
        grader=user,
        manual_score=body.manual_score,
        feedback=body.feedback,
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
