"""Bulk regrade pages: pick a problem (optionally only submissions since a date, or only those below full marks),
preview how many would be regraded, their scores now and (answer problems) how the regrade would change them,
apply as one queued job per submission, follow progress."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.datastructures import FormData

from app.courses import service as courses
from app.courses.access import Access, access_for
from app.courses.models import Offering
from app.courses.permissions import Action
from app.deps import RowId, RowIdQuery
from app.errors import Conflict, Invalid
from app.gradebook import bulk_regrade
from app.users.models import User
from app.web.deps import CheckedForm, WebInstructor, WebSession
from app.web.i18n import for_request
from app.web.page_route import WebRoute
from app.web.rendering import render, render_fragment

router = APIRouter(route_class=WebRoute)


def _since(raw: str, zone: str) -> datetime | None:
    """A datetime-local field, read in the offering's time zone."""
    if not raw:
        return None
    try:
        naive = datetime.fromisoformat(raw)
    except ValueError as exc:
        raise Invalid(f"since: {raw[:40]!r} is not a date and time", field="since") from exc
    return (naive if naive.tzinfo else naive.replace(tzinfo=ZoneInfo(zone))).astimezone(UTC)


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
        **extra,
    }
    if fields["problem"] and "error" not in extra:
        try:
            context["selection"] = _select(session, access, slug, found.assignment.offering_id, fields)
        except Invalid as exc:
            status, context["error"] = 422, exc.message
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
                     error=exc.message)  # fmt: skip
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
