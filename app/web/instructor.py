"""Instructor pages: sets and uploads with the validation report, the gradebook, regrades and manual grades."""

from __future__ import annotations

import functools
import math
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import UploadFile

from app.courses import service as courses
from app.courses.access import Access, access_for
from app.courses.models import Offering
from app.courses.permissions import Action
from app.deps import RowId, RowIdQuery
from app.errors import N_, DomainError, Forbidden, Invalid, NotFound
from app.gradebook import service as gradebook
from app.gradebook.stats import set_stats
from app.gradebook.student_work import student_work
from app.problemsets import refused
from app.problemsets import service as sets
from app.problemsets.models import ProblemSet, ProblemSetVersion
from app.users.models import User
from app.web import charts, page_context
from app.web.background_jobs import BackgroundJobs
from app.web.deps import CheckedForm, WebGradebookReader, WebInstructor, WebSession, WebSettings
from app.web.i18n import error_text, for_request
from app.web.page_route import WebRoute
from app.web.rendering import render, render_fragment
from app.web.upload_jobs import UploadJob

router = APIRouter(route_class=WebRoute)


def _staff_sets(session: WebSession, user: User) -> list[tuple[ProblemSet, ProblemSetVersion]]:
    """The sets assigned in the offerings the user teaches (each once), at the version students see."""
    access = access_for(session, user)
    seen: dict[int, tuple[ProblemSet, ProblemSetVersion]] = {}
    for found in courses.visible_assignments(session, access):
        if access.can(found.assignment.offering_id, Action.VIEW_UNRELEASED):
            seen.setdefault(found.problem_set.id, (found.problem_set, courses.version_of(session, found.assignment)))
    return sorted(seen.values(), key=lambda pair: pair[0].slug)


def _instructor_page(request: Request, session: WebSession, user: User, status: int = 200, **context: Any) -> Response:
    refused_sets = refused.listed(request.app.state.settings)
    loader = request.app.state.set_loader
    # The background loading of `serve`'s sets (app.problemsets.set_loader): listed while any is not plainly live.
    loading = loader.statuses() if loader is not None else []
    if all(s.phase == "done" for s in loading):
        loading = []
    offerings, chosen = _upload_choices(request, session, user, context.pop("upload_offering", None))
    return render(
        request, "instructor/index.html", status, sets=_staff_sets(session, user), refused=refused_sets,
        loading=loading, upload_offerings=offerings, upload_offering=chosen, **context,
    )  # fmt: skip


def _upload_choices(
    request: Request, session: WebSession, user: User, typed: object
) -> tuple[list[Offering], int | None]:
    """The offerings the upload form offers (those the user may upload into, by course and offering) and the one
    chosen: the one typed in a refused form, else ``?offering=`` of the page's address, else the only one."""
    mine = access_for(session, user).offerings(Action.UPLOAD)
    offerings = sorted(
        (o for o in (session.get(Offering, i) for i in mine) if o is not None),
        key=lambda o: (o.course.title, o.title, o.id),
    )
    for raw in (typed, request.query_params.get("offering")):
        if isinstance(raw, str) and raw.isdigit() and len(raw) < 10 and int(raw) in mine:
            return offerings, int(raw)
    return offerings, offerings[0].id if len(offerings) == 1 else None


@router.get("/instructor")
def instructor_home(request: Request, user: WebInstructor, session: WebSession) -> Response:
    """Every set (visible or not) with links to its gradebook, and the upload form."""
    return _instructor_page(request, session, user)


@router.post("/instructor/upload")
def upload(
    request: Request, form: CheckedForm, user: WebInstructor, session: WebSession, settings: WebSettings
) -> Response:
    """Check the file and the offering, then validate in the background and go to the upload's progress page."""
    file, tr = form.get("file"), for_request(request)
    if not isinstance(file, UploadFile) or not file.filename:
        return _instructor_page(
            request, session, user, 422, upload_error=tr.gettext("Choose a .zip or .tar.gz file to upload.")
        )
    data = file.file.read(settings.max_upload_bytes + 1)
    try:
        if len(data) > settings.max_upload_bytes:
            message = tr.gettext("The archive is larger than %(limit)d bytes.")
            raise Invalid(message % {"limit": settings.max_upload_bytes}, field="file")
        target = _upload_target(request, session, access_for(session, user), user, form.get("offering"))
    except (Invalid, Forbidden) as exc:
        session.rollback()
        return _instructor_page(request, session, user, 422, upload_error=error_text(request, exc),
                                upload_offering=form.get("offering"))  # fmt: skip
    work = functools.partial(validate_and_store, request.app.state, user.id, target.id, data, file.filename)
    job = UploadJob(owner_id=user.id, filename=file.filename)
    upload_jobs(request).start(job, work)
    return RedirectResponse(f"/instructor/uploads/{job.id}", status_code=303)


def upload_jobs(request: Request) -> BackgroundJobs[UploadJob]:
    jobs: BackgroundJobs[UploadJob] = request.app.state.upload_jobs
    return jobs


def validate_and_store(
    state: Any, user_id: int, offering_id: int, data: bytes, filename: str, job: UploadJob, based_on: int | None = None
) -> tuple[int, dict[str, Any]]:
    """The upload's validation and storage (a thread of its own, with its own session): (status, page context).
    ``based_on``: the version number the archive was made from (refused if the set has another latest one)."""
    settings = state.settings
    with state.session_factory() as session:
        user = session.get(User, user_id)
        if user is None:
            return 404, {"upload_error": N_("Your account is gone.")}
        access = access_for(session, user)
        mine = access.offerings(Action.UPLOAD)
        try:
            target = courses.get_offering(session, access, offering_id, Action.UPLOAD)
            version, report, created = sets.upload(
                session,
                data=data,
                filename=filename,
                settings=settings,
                user_id=user.id,
                grader=state.code_grader,
                may_replace=lambda ps: user.is_admin or bool(courses.offerings_with_set(session, ps) & mine),
                progress=job.lines.append,
                on_loaded=lambda loaded: setattr(job, "total", sets.gate_files(loaded)),
                based_on=based_on,
            )
            courses.ensure_assigned(session, offering=target, problem_set=version.problem_set, published=False)
        except sets.ProblemSetRejected as exc:
            session.rollback()
            return 422, {"report": exc.report.to_dict(), "gate_texts": exc.report.gate_texts, "filename": filename}
        except DomainError as exc:
            session.rollback()
            # Worded when shown, in the viewer's language. Kept for an hour: without its traceback and cause, which
            # hold this frame (the whole archive) and the loaded set.
            exc.__traceback__ = exc.__cause__ = exc.__context__ = None
            return 422, {"upload_error": exc}
        session.commit()
        return 200, {
            "report": report.to_dict() if created else version.validation_report,
            "gate_texts": report.gate_texts,
            "filename": filename,
            "stored": {"slug": version.problem_set.slug, "version": version.number, "created": created},
        }


@router.get("/instructor/uploads/{job_id}")
def upload_page(request: Request, job_id: str, user: WebInstructor, session: WebSession) -> Response:
    """While the gate runs, its progress (refreshed in place); then the validation report, as the upload gave it."""
    job = upload_jobs(request).get(job_id[:64], owner_id=user.id)
    if job is None:
        raise NotFound(for_request(request).gettext("No such upload (uploads are kept for an hour)."))
    if job.done:
        shown = dict(job.result)
        failed = shown.get("upload_error")  # the error, or a fixed N_-marked message
        if isinstance(failed, DomainError):
            shown["upload_error"] = error_text(request, failed)
        elif failed is not None:
            shown["upload_error"] = for_request(request).gettext(failed)
        return _instructor_page(request, session, user, job.status, **shown)
    return render(request, "instructor/upload_progress.html", 202, job=job, waiting=True)


@router.get("/instructor/uploads/{job_id}/live")
def upload_live(request: Request, job_id: str, user: WebInstructor) -> Response:
    """The progress part of that page; X-Progress: done once the report is ready (the page then reloads)."""
    job = upload_jobs(request).get(job_id[:64], owner_id=user.id)
    if job is None:
        raise NotFound(for_request(request).gettext("No such upload (uploads are kept for an hour)."))
    response = HTMLResponse(render_fragment(request, "instructor/_upload_progress.html", job=job))
    response.headers["X-Progress"] = "done" if job.done else "running"
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/instructor/sets/{slug}/gradebook")
def gradebook_page(
    request: Request, slug: str, user: WebGradebookReader, session: WebSession, offering: RowIdQuery = None
) -> Response:
    """The gradebook table of one offering, the CSV link, per-question statistics and what awaits manual grading.

    A cell whose best attempt waits for hand grading shows "pending", not its automatic 0, and the row's total
    leaves it out until it is graded.
    """
    return gradebook_response(request, session, user, slug, offering)


def gradebook_response(
    request: Request, session: WebSession, user: User, slug: str, offering: int | None, status: int = 200, **extra: Any
) -> Response:
    """The gradebook page (``extra`` adds to its context: an error of a form posted from it)."""
    access = access_for(session, user)
    book = gradebook.gradebook(session, access=access, slug=slug, offering_id=offering)
    awaiting = (
        gradebook.awaiting_manual(session, access=access, slug=slug, offering_id=book.offering)
        if access.can(book.offering, Action.GRADE)
        else []
    )
    # awaiting_manual lists each student's latest graded attempt that nobody has scored by hand yet.
    pending = {(a.user_id, a.problem) for a in awaiting}
    totals = {
        row.user_id: sum(c.best_score or 0.0 for pid, c in row.cells.items() if (row.user_id, pid) not in pending)
        for row in book.students
    }
    stats = set_stats(session, access=access, slug=slug, offering_id=book.offering)
    return render(
        request,
        "instructor/gradebook.html",
        status,
        book=book,
        stats=stats,
        charts_of={q.id: charts.ProblemCharts.of(q, for_request(request)) for q in stats.problems},
        bin_label=charts.bin_label,
        awaiting=awaiting,
        pending=pending,
        totals=totals,
        can_grade=access.can(book.offering, Action.GRADE),
        # Observers read the gradebook, not the submissions: their names and scores are text, not links to a 403.
        can_read_work=access.can(book.offering, Action.READ_SUBMISSIONS),
        # Accepting a wrong answer as an alias makes a new version of the set: for those who may upload sets.
        can_add_alias=access.can(book.offering, Action.UPLOAD),
        **extra,
    )


@router.get("/offerings/{offering_id}/students/{user_id}")
def student_page(
    request: Request, offering_id: RowId, user_id: RowId, user: WebInstructor, session: WebSession
) -> Response:
    """One student's gradebook row (the counted score per problem, each assignment's total), then their submissions
    across the offering's assignments with automatic, manual and final scores (staff who may read submissions)."""
    work = student_work(session, access=access_for(session, user), offering_id=offering_id, user_id=user_id)
    return render(request, "instructor/student.html", work=work)


@router.post("/submissions/{submission_id}/regrade")
def regrade(
    request: Request, submission_id: RowId, form: CheckedForm, user: WebInstructor, session: WebSession
) -> Response:
    """Requeue the submission and go back to its page, which refreshes until the new grade is in."""
    gradebook.regrade(session, access=access_for(session, user), submission_id=submission_id)
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
                                      for_request(request).gettext("manual_score: %(value)s is not a number.")
                                      % {"value": repr(raw)})  # fmt: skip
    try:
        gradebook.manual_grade(session, access=access_for(session, user), submission_id=submission_id, grader=user,
                               manual_score=score, feedback=feedback)  # fmt: skip
    except Invalid as exc:
        session.rollback()
        shown = error_text(request, exc)
        return _submission_with_error(request, session, settings, user, submission_id, raw, feedback, shown)

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


def _upload_target(request: Request, session: WebSession, access: Access, user: User, raw: object) -> Offering:
    """The offering an upload is assigned in: the form's choice, else the one the user teaches."""
    if isinstance(raw, str) and raw.isdigit() and len(raw) < 10:
        return courses.get_offering(session, access, int(raw), Action.UPLOAD)
    mine = sorted(access.offerings(Action.UPLOAD))
    if len(mine) == 1:
        return courses.get_offering(session, access, mine[0], Action.UPLOAD)
    if not mine and user.is_admin:
        return courses.home_offering(session)
    tr = for_request(request)
    raise Invalid(
        tr.gettext("Choose the offering to upload into.")
        if mine
        else tr.gettext("You teach no offering to upload into.")
    )
