"""Instructor pages: sets and uploads with the validation report, the gradebook, regrades and manual grades."""

from __future__ import annotations

import math
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from starlette.datastructures import UploadFile

from app.deps import RowId
from app.errors import Invalid
from app.gradebook import service as gradebook
from app.gradebook.stats import set_stats
from app.problemsets import refused
from app.problemsets import service as sets
from app.web import page_context
from app.web.deps import CheckedForm, WebInstructor, WebSession, WebSettings
from app.web.page_route import WebRoute
from app.web.rendering import render

router = APIRouter(route_class=WebRoute)


def _instructor_page(request: Request, session: WebSession, status: int = 200, **context: Any) -> Response:
    listed = sets.list_sets(session, include_hidden=True)
    refused_sets = refused.listed(request.app.state.settings)
    return render(request, "instructor/index.html", status, sets=listed, refused=refused_sets, **context)


@router.get("/instructor")
def instructor_home(request: Request, user: WebInstructor, session: WebSession) -> Response:
    """Every set (visible or not) with links to its gradebook, and the upload form."""
    return _instructor_page(request, session)


@router.post("/instructor/upload")
def upload(
    request: Request, form: CheckedForm, user: WebInstructor, session: WebSession, settings: WebSettings
) -> Response:
    """Validate and store an uploaded .zip/.tar.gz set; the page shows the validation report either way."""
    file = form.get("file")
    if not isinstance(file, UploadFile) or not file.filename:
        return _instructor_page(request, session, 422, upload_error="Choose a .zip or .tar.gz file to upload.")
    data = file.file.read(settings.max_upload_bytes + 1)
    try:
        if len(data) > settings.max_upload_bytes:
            raise Invalid(f"The archive is larger than {settings.max_upload_bytes} bytes.", field="file")
        # Validation runs the reference solutions and mutants; this handler is sync, so it runs in a worker thread.
        version, report, created = sets.upload(
            session,
            data=data,
            filename=file.filename,
            settings=settings,
            user_id=user.id,
            grader=request.app.state.code_grader,
        )
    except sets.ProblemSetRejected as exc:
        session.rollback()
        return _instructor_page(
            request, session, 422, report=exc.report.to_dict(), gate_texts=exc.report.gate_texts, filename=file.filename
        )
    except Invalid as exc:
        session.rollback()
        return _instructor_page(request, session, 422, upload_error=exc.message)
    session.commit()
    return _instructor_page(
        request,
        session,
        report=report.to_dict() if created else version.validation_report,
        gate_texts=report.gate_texts,
        filename=file.filename,
        stored={"slug": version.problem_set.slug, "version": version.number, "created": created},
    )


@router.get("/instructor/sets/{slug}/gradebook")
def gradebook_page(request: Request, slug: str, user: WebInstructor, session: WebSession) -> Response:
    """The gradebook table, the CSV link, per-question statistics and what awaits manual grading.

    A cell whose best attempt waits for hand grading shows "pending", not its automatic 0, and the row's total
    leaves it out until it is graded.
    """
    book = gradebook.gradebook(session, slug=slug)
    awaiting = gradebook.awaiting_manual(session, slug=slug)
    # awaiting_manual lists each student's latest graded attempt that nobody has scored by hand yet.
    pending = {(a.user_id, a.problem) for a in awaiting}
    totals = {
        row.user_id: sum(c.best_score or 0.0 for pid, c in row.cells.items() if (row.user_id, pid) not in pending)
        for row in book.students
    }
    return render(request, "instructor/gradebook.html", book=book, stats=set_stats(session, slug=slug),
                  awaiting=awaiting, pending=pending, totals=totals)  # fmt: skip


@router.post("/submissions/{submission_id}/regrade")
def regrade(
    request: Request, submission_id: RowId, form: CheckedForm, user: WebInstructor, session: WebSession
) -> Response:
    """Requeue the submission and go back to its page, which refreshes until the new grade is in."""
    gradebook.regrade(session, submission_id=submission_id)
    request.app.state.dispatch(submission_id)
    return RedirectResponse(f"/submissions/{submission_id}", status_code=303)


@router.post("/submissions/{submission_id}/manual-grade")
def manual_grade(
    request: Request,
    submission_id: RowId,
    form: CheckedForm,
    user: WebInstructor,
    session: WebSession,
    settings: WebSettings,
) -> Response:
    """Save a hand-scored mark and feedback; a bad value re-renders the page with the message."""
    raw, feedback = str(form.get("manual_score") or "").strip(), str(form.get("feedback") or "")
    try:
        score = float(raw)
        if not math.isfinite(score):
            raise ValueError(raw)
    except ValueError:
        return _submission_with_error(request, session, settings, user, submission_id, raw, feedback,
                                      f"manual_score: {raw!r} is not a number.")  # fmt: skip
    try:
        gradebook.manual_grade(session, submission_id=submission_id, grader=user, manual_score=score, feedback=feedback)
    except Invalid as exc:
        session.rollback()
        return _submission_with_error(request, session, settings, user, submission_id, raw, feedback, exc.message)
    return RedirectResponse(f"/submissions/{submission_id}", status_code=303)


def _submission_with_error(
    request: Request,
    session: WebSession,
    settings: WebSettings,
    user: WebInstructor,
    submission_id: RowId,
    raw: str,
    feedback: str,
    message: str,
) -> Response:
    page = page_context.submission_page(session, settings, user=user, submission_id=submission_id)
    typed = {"manual_score": raw, "feedback": feedback}
    return render(request, "submission.html", 422, math=True, page=page, manual_error=message, manual_typed=typed)
