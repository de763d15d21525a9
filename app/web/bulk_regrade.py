"""Bulk regrade pages: pick a problem (optionally only submissions since a date, or only those below full marks),
preview how many would be regraded, their scores now and (answer problems) how the regrade would change them,
try a code problem's regrade in the background (nothing saved) to see the same, apply as one queued job per
submission, follow progress."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import FormData

from app.courses import service as courses
from app.courses.access import Access, access_for
from app.courses.models import Assignment, Offering
from app.courses.permissions import Action
from app.deps import RowId, RowIdQuery
from app.errors import Conflict, Invalid, NotFound
from app.gradebook import bulk_regrade, trial_regrade
from app.input_types import to_utc
from app.users.models import User
from app.web.background_jobs import BackgroundJobs
from app.web.deps import CheckedForm, WebInstructor, WebSession
from app.web.i18n import error_text, for_request
from app.web.page_route import WebRoute
from app.web.rendering import render, render_fragment
from app.web.trial_jobs import TrialJob, trial_work

router = APIRouter(route_class=WebRoute)


def _since(raw: str, zone: str) -> datetime | None:
    """A datetime-local field, read in the offering's time zone."""
    if not raw:
        return None
    try:
        naive = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise Invalid(f"since: {raw[:40]!r} is not a date and time", field="since") from exc
    try:
        return to_utc(naive, ZoneInfo(zone))
    except ValueError as exc:
        raise Invalid(f"since: {exc}", field="since") from exc


def _fields(source: FormData | dict[str, str]) -> dict[str, str]:
    return {k: str(source.get(k) or "").strip()[:100] for k in ("problem", "since", "below_full", "expected")}


def _page(
    request: Request,
    session: WebSession,
    user: User,
    slug: str,
    offering: int | None,
    fields: dict[str, str],
    status: int = 200,
    **extra: Any,
) -> Response:
    access = access_for(session, user)
    found = courses.resolve(session, access, slug, offering_id=offering, action=Action.GRADE)
    spec = courses.version_of(session, found.assignment).spec
    context: dict[str, Any] = {
        "slug": slug,
        "title": found.problem_set.title,
        "offering": found.assignment.offering,
        "problems": [(p["id"], p.get("title", p["id"])) for p in spec.get("problems", [])],
        "fields": fields,
        "trial_limit": trial_regrade.TRIAL_LIMIT,
        **extra,
    }
    if fields["problem"] and "error" not in extra:
        try:
            context["selection"] = _select(session, access, slug, found.assignment.offering_id, fields)
        except Invalid as exc:
            status, context["error"] = 422, error_text(request, exc)
        else:  # graded here with nothing written; the session is rolled back so nothing could be
            context["prediction"] = bulk_regrade.predict(session, request.app.state.settings, context["selection"])
            session.rollback()
    return render(request, "instructor/regrade.html", status, **context)


def _select(
    session: WebSession, access: Access, slug: str, offering: int, fields: dict[str, str]
) -> bulk_regrade.Selection:
    zone = courses.get_offering(session, access, offering).time_zone
    return bulk_regrade.select_for_regrade(
        session,
        access=access,
        slug=slug,
        offering_id=offering,
        problem_id=fields["problem"],
        since=_since(fields["since"], zone),
        below_full=fields["below_full"] == "on",
    )


@router.get("/instructor/sets/{slug}/regrade")
def regrade_page(
    request: Request, slug: str, user: WebInstructor, session: WebSession, offering: RowIdQuery = None
) -> Response:
    """The selection form; with a problem chosen, the preview (nothing is changed by this page)."""
    return _page(request, session, user, slug, offering, _fields(dict(request.query_params)))


@router.post("/instructor/sets/{slug}/regrade")
def start_regrade(
    request: Request,
    slug: str,
    form: CheckedForm,
    user: WebInstructor,
    session: WebSession,
    offering: RowIdQuery = None,
) -> Response:
    """Requeue the previewed selection (refused if it changed since the preview), then show its progress."""
    fields = _fields(form)
    access = access_for(session, user)
    found = courses.resolve(session, access, slug, offering_id=offering, action=Action.GRADE)
    try:
        selection = _select(session, access, slug, found.assignment.offering_id, fields)
        if str(len(selection.submissions)) != fields["expected"]:
            n = len(selection.submissions)
            message = for_request(request).ngettext(
                "the selection changed since the preview: it now holds %(num)d submission, not %(expected)s; "
                "check the preview again",
                "the selection changed since the preview: it now holds %(num)d submissions, not %(expected)s; "
                "check the preview again",
                n,
            )
            raise Conflict(message % {"num": n, "expected": fields["expected"] or "?"})
        batch = bulk_regrade.start(session, selection=selection, user=user)
    except (Invalid, Conflict) as exc:
        session.rollback()
        return _page(request, session, user, slug, found.assignment.offering_id, fields, exc.status_code,
                     error=error_text(request, exc))  # fmt: skip
    for sub in selection.submissions:  # committed by start: the workers find them queued
        request.app.state.dispatch(sub.id)
    return RedirectResponse(f"/instructor/regrades/{batch.id}", status_code=303)


@router.get("/instructor/regrades/{batch_id}")
def progress_page(request: Request, batch_id: RowId, user: WebInstructor, session: WebSession) -> Response:
    """How far the batch is: graded again, still queued, failed; which scores changed (refreshes until done)."""
    progress = bulk_regrade.batch_progress(session, access=access_for(session, user), batch_id=batch_id)
    offering = session.get(Offering, progress.offering_id)
    zone = offering.time_zone if offering is not None else None
    return render(request, "instructor/regrade_progress.html", p=progress, zone=zone, waiting=not progress.finished)


@router.get("/instructor/regrades/{batch_id}/live")
def progress_live(request: Request, batch_id: RowId, user: WebInstructor, session: WebSession) -> Response:
    """The progress part of that page, for the page's script to swap in; X-Progress says running or done."""
    progress = bulk_regrade.batch_progress(session, access=access_for(session, user), batch_id=batch_id)
    response = HTMLResponse(render_fragment(request, "instructor/_regrade_progress.html", p=progress))
    response.headers["X-Progress"] = "done" if progress.finished else "running"
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/instructor/sets/{slug}/regrade/trial")
def start_trial(
    request: Request,
    slug: str,
    form: CheckedForm,
    user: WebInstructor,
    session: WebSession,
    offering: RowIdQuery = None,
) -> Response:
    """Grade the previewed selection (at most 200 of it) against the current version in the background, saving
    nothing; then the trial's page. One trial at a time per person (409 while the previous one runs)."""
    fields, tr = _fields(form), for_request(request)
    access = access_for(session, user)
    found = courses.resolve(session, access, slug, offering_id=offering, action=Action.GRADE)
    trials: BackgroundJobs[TrialJob] = request.app.state.trial_jobs
    busy = tr.gettext("Your previous trial run is still grading: wait for it to end, then try again.")
    try:
        if trials.running(owner_id=user.id):  # before planning: a refused trial reads nothing
            raise Conflict(busy)
        selection = _select(session, access, slug, found.assignment.offering_id, fields)
        plan = trial_regrade.plan_trial(session, request.app.state.settings, selection)
        session.rollback()  # the plan only read
        job = TrialJob(
            owner_id=user.id,
            assignment_id=found.assignment.id,
            offering_id=found.assignment.offering_id,
            slug=slug,
            fields={k: fields[k] for k in ("problem", "since", "below_full")},
            version_number=plan.version_number,
            selected=plan.selected,
            total=len(plan.items),
        )
        if not trials.start(job, trial_work(plan, request.app.state.code_grader), alone=True):
            raise Conflict(busy)  # another request of theirs started one meanwhile
    except (Invalid, Conflict) as exc:
        session.rollback()
        return _page(request, session, user, slug, found.assignment.offering_id, fields, exc.status_code,
                     error=error_text(request, exc))  # fmt: skip
    return RedirectResponse(f"/instructor/regrade-trials/{job.id}", status_code=303)


def _trial(request: Request, session: WebSession, user: User, job_id: str) -> tuple[TrialJob, dict[str, Any]]:
    """The caller's own trial, while they may still grade in its offering (404 otherwise), and its page's context."""
    trials: BackgroundJobs[TrialJob] = request.app.state.trial_jobs
    job = trials.get(job_id[:64], owner_id=user.id)
    assignment = session.get(Assignment, job.assignment_id) if job is not None else None
    if job is None or assignment is None or not access_for(session, user).can(job.offering_id, Action.GRADE):
        tr = for_request(request)
        raise NotFound(tr.gettext("No such trial run (kept for an hour after it ends, lost when the server restarts)."))
    return job, {
        "title": assignment.problem_set.title,
        "offering": assignment.offering,
        "current_version": courses.version_of(session, assignment).number,  # applying grades against this one
    }


@router.get("/instructor/regrade-trials/{job_id}")
def trial_page(request: Request, job_id: str, user: WebInstructor, session: WebSession) -> Response:
    """A trial run's progress (refreshed in place), then what applying would change and the button to apply."""
    job, context = _trial(request, session, user, job_id)
    return render(request, "instructor/regrade_trial.html", 200 if job.done else 202, job=job, waiting=not job.done,
                  **context)  # fmt: skip


@router.get("/instructor/regrade-trials/{job_id}/live")
def trial_live(request: Request, job_id: str, user: WebInstructor, session: WebSession) -> Response:
    """The progress part of that page, with the result once done; X-Progress says running or done."""
    job, context = _trial(request, session, user, job_id)
    response = HTMLResponse(render_fragment(request, "instructor/_regrade_trial.html", job=job, **context))
    response.headers["X-Progress"] = "done" if job.done else "running"
    response.headers["Cache-Control"] = "no-store"
    return response
