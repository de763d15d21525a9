"""Pages every logged-in user has: sets, a set's problems and answer forms, a submission, history."""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import asdict
from typing import Annotated
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData

from app.config import Settings
from app.courses import service as courses
from app.courses.access import access_for
from app.courses.policy import Closed, TooManyAttempts
from app.deps import RowId, RowIdQuery, cross_site
from app.errors import Invalid
from app.input_types import FiniteSeconds
from app.problemsets.service import loaded_version
from app.submissions import service as submissions
from app.submissions.events import SAFETY_POLL_S, GradeEvents
from app.submissions.intake import ANSWER_PREFIX, web_form_input
from app.submissions.models import Source
from app.submissions.presenter import submission_summary
from app.submissions.release import SealCache
from app.users.models import User
from app.users.service import cookie_user
from app.web import i18n, page_context
from app.web.deps import CheckedForm, LoginRequired, WebSession, WebSettings, WebUser
from app.web.page_route import WebRoute
from app.web.rendering import render, render_fragment
from graders.answers.preview import Preview
from graders.answers.registry import ANSWER_KINDS

router = APIRouter(route_class=WebRoute)
WAITING = ("queued", "running")
LIVE_WAIT_S = 25.0  # one long request at a time per waiting page; the script asks again until graded


@router.get("/")
def index(request: Request, user: WebUser, session: WebSession) -> Response:
    """The sets you can see, with your progress."""
    cards = page_context.set_cards(session, user=user)
    # One zone for the whole page: the browser's, else the offerings' when they share one, else UTC.
    zones = {c.zone for c in cards}
    zone = i18n.viewer_zone(request) or (zones.pop() if len(zones) == 1 else "UTC")
    return render(request, "index.html", cards=cards, page_zone=zone)


@router.get("/sets/{slug}")
def set_page(
    request: Request, slug: str, user: WebUser, session: WebSession, settings: WebSettings, offering: RowIdQuery = None
) -> Response:
    """A set's problems with their prompts and answer forms (``offering`` when it is in several of yours).

    Without ``offering``, a set assigned in several of your offerings shows a page to choose one.
    """
    try:
        if cross_site(request):  # a link or a navigation from another site does not start a timed set's clock
            pending = page_context.start_confirm(session, user=user, slug=slug, offering_id=offering)
            if pending is not None:
                return render(request, "timed_start.html", **asdict(pending))
        context = page_context.set_page(
            session, settings, user=user, slug=slug, offering_id=offering, tr=i18n.for_request(request)
        )
    except courses.Ambiguous as exc:  # raised before anything is opened or started
        chooser = page_context.set_chooser(session, user=user, slug=slug, offering_ids=exc.offering_ids)
        links = {c.offering: _with_offering(request, c.offering) for c in chooser.choices}
        return render(request, "set_chooser.html", title=chooser.title, choices=chooser.choices, links=links)
    return render(request, "set.html", math=True, **context)


def _with_offering(request: Request, offering_id: int) -> str:
    """This page's address with ``offering`` set (the rest of its query kept)."""
    query = [(k, v) for k, v in request.query_params.multi_items() if k != "offering"]
    return f"{request.url.path}?{urlencode([*query, ('offering', str(offering_id))])}"


@router.post("/sets/{slug}/problems/{problem_id}")
def submit(
    request: Request,
    slug: str,
    problem_id: str,
    form: CheckedForm,
    user: WebUser,
    session: WebSession,
    settings: WebSettings,
) -> Response:
    """Store the answers or code as a submission, wake a worker, and show the submission."""
    try:
        sub_id = _store(session, settings, form, user=user, slug=slug, problem_id=problem_id)
    except (Invalid, TooManyAttempts, Closed) as exc:
        # A malformed answer, a used-up attempt, or too late: back to the form with the reason (nothing stored).
        session.rollback()
        # Back to the set page with the message next to this problem and the answers as they were typed.
        typed = {
            k.removeprefix(ANSWER_PREFIX): [v for v in form.getlist(k) if isinstance(v, str)]
            for k in form
            if k.startswith(ANSWER_PREFIX)
        }
        code = form.get("code")
        context = page_context.set_page(session, settings, user=user, slug=slug, offering_id=_offering_field(form),
                                        typed=typed, typed_problem=problem_id,
                                        tr=i18n.for_request(request))  # fmt: skip
        error = i18n.refusal_message(request, exc, zone=context["zone"])
        return render(request, "set.html", exc.status_code, math=True, error_problem=problem_id, error=error,
                      typed_code=code if isinstance(code, str) else "", **context)  # fmt: skip
    request.app.state.dispatch(sub_id)
    return RedirectResponse(f"/submissions/{sub_id}", status_code=303)


@router.get("/sets/{slug}/problems/{problem_id}")
def problem_address(request: Request, slug: str, problem_id: str) -> RedirectResponse:
    """The address a refused submission leaves in the address bar (the form's POST): reloading it or coming back
    to it later opens the problem on its set page, not a bare 405."""
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(f"/sets/{quote(slug)}{query}#problem-{quote(problem_id)}", status_code=303)


def _store(session: Session, settings: Settings, form: FormData, *, user: User, slug: str, problem_id: str) -> int:
    access = access_for(session, user)
    offering_id = _offering_field(form)
    found = courses.resolve(session, access, slug, offering_id=offering_id)
    loaded = loaded_version(settings, courses.version_of(session, found.assignment))
    problem = loaded.spec.problem(problem_id)
    if problem is None:
        raise Invalid(f"This set has no problem {problem_id!r}.", field="problem")
    answers, code = web_form_input(form, problem)
    # create() commits, so the worker woken next finds the row.
    sub, _ = submissions.create(
        session,
        settings=settings,
        user=user,
        access=access,
        offering_id=found.assignment.offering_id,
        problem_set=slug,
        problem_id=problem_id,
        answers=answers,
        code=code,
        source=Source.WEB,
    )
    return sub.id


@router.get("/sets/{slug}/problems/{problem_id}/preview")
def preview(
    slug: str,
    problem_id: str,
    user: WebUser,
    session: WebSession,
    settings: WebSettings,
    part: str = "",
    text: str = "",
    offering: RowIdQuery = None,
) -> JSONResponse:
    """How a blank's text parses (LaTeX for KaTeX, or the parse error), before it is submitted; never right/wrong.

    Only for a set assigned to the viewer (404 otherwise), like the set page itself.
    """
    found = courses.resolve(session, access_for(session, user), slug, offering_id=offering)
    version = courses.version_of(session, found.assignment)
    problem = loaded_version(settings, version).spec.problem(problem_id)
    parts = problem.answer_parts() if problem is not None else []
    spec = dict(zip(problem.part_ids(), parts, strict=False)).get(part) if problem is not None else None
    kind = ANSWER_KINDS[spec.kind] if spec is not None else None
    if spec is None or kind is None or kind.preview is None:
        return JSONResponse({"ok": False, "latex": "", "error": f"no preview for part {part[:20]!r}"}, status_code=404)
    shown = kind.preview(text, spec) if text.strip() else Preview()
    return JSONResponse({"ok": shown.ok, "latex": shown.latex, "error": shown.error})


@router.get("/submissions/{submission_id}")
def submission_page(
    request: Request, submission_id: RowId, user: WebUser, session: WebSession, settings: WebSettings
) -> Response:
    """Status (updated in place while it is graded), score, per-check results, feedback and the explanation."""
    page = page_context.submission_page(session, settings, user=user, submission_id=submission_id)
    return render(request, "submission.html", math=True, page=page, waiting=page.sub.status in WAITING)


@router.get("/submissions/{submission_id}/live")
async def submission_live(
    request: Request, submission_id: RowId, wait: Annotated[FiniteSeconds, Query()] = 0
) -> Response:
    """The result part of the submission page, once graded or after ``wait`` seconds (for in-place updates).

    Woken by the worker's grade event, like the API's ``?wait``; the page's script asks again while it is waiting.
    No database session is held while waiting: each read opens its own (many pages may wait at once).
    """
    settings = request.app.state.settings
    deadline = time.monotonic() + min(wait, LIVE_WAIT_S)
    events: GradeEvents = request.app.state.grade_events
    with events.listen(submission_id) as finished_event:  # registered before the first read: no wake-up is missed
        while True:
            page, html = await run_in_threadpool(_live_fragment, request, settings, submission_id)
            remaining = deadline - time.monotonic()
            if page.sub.status not in WAITING or remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(finished_event.wait(), min(remaining, SAFETY_POLL_S))
            finished_event.clear()
    response = HTMLResponse(html)
    response.headers["X-Submission-Status"] = str(page.sub.status)
    return response


def _live_fragment(request: Request, settings: Settings, submission_id: int) -> tuple[page_context.SubmissionPage, str]:
    with request.app.state.session_factory() as session:
        user = cookie_user(session, request.session)
        if user is None:
            raise LoginRequired
        page = page_context.submission_page(session, settings, user=user, submission_id=submission_id)
        html = render_fragment(request, "_result.html", page=page, user=user)
        return page, html


@router.get("/history")
def history(request: Request, user: WebUser, session: WebSession) -> Response:
    """Your submissions, newest first."""
    access = access_for(session, user)
    rows = submissions.list_for(session, access=access, user_id=user.id, limit=200)
    seals = SealCache(session, access)
    return render(request, "history.html", rows=[submission_summary(s, seal=seals(s)) for s in rows])


def _offering_field(form: FormData) -> int | None:
    """The set page posts its offering (a set may be assigned in several of the user's offerings)."""
    raw = form.get("offering")
    return int(raw) if isinstance(raw, str) and raw.isdigit() and len(raw) < 10 else None
