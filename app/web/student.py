"""Pages every logged-in user has: sets, a set's problems and answer forms, a submission, history."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse
from sqlalchemy.orm import Session
from starlette.datastructures import FormData

from app.config import Settings
from app.courses import service as courses
from app.courses.access import access_for
from app.courses.policy import TooManyAttempts
from app.deps import RowId, RowIdQuery
from app.errors import Invalid
from app.problemsets.service import loaded_version
from app.submissions import service as submissions
from app.submissions.intake import ANSWER_PREFIX, web_form_input
from app.submissions.models import Source
from app.submissions.presenter import submission_summary
from app.submissions.release import SealCache
from app.users.models import User
from app.web import page_context
from app.web.deps import CheckedForm, WebSession, WebSettings, WebUser
from app.web.page_route import WebRoute
from app.web.rendering import render

router = APIRouter(route_class=WebRoute)


@router.get("/")
def index(request: Request, user: WebUser, session: WebSession) -> Response:
    """The sets you can see, with your progress."""
    return render(request, "index.html", cards=page_context.set_cards(session, user=user))


@router.get("/sets/{slug}")
def set_page(
    request: Request, slug: str, user: WebUser, session: WebSession, settings: WebSettings, offering: RowIdQuery = None
) -> Response:
    """A set's problems with their prompts and answer forms (``offering`` when it is in several of yours)."""
    context = page_context.set_page(session, settings, user=user, slug=slug, offering_id=offering)
    return render(request, "set.html", math=True, **context)


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
    except (Invalid, TooManyAttempts) as exc:
        # A malformed answer or a used-up attempt: back to the form with the reason (nothing was stored).
        session.rollback()
        # Back to the set page with the message next to this problem and the answers as they were typed.
        typed = {k.removeprefix(ANSWER_PREFIX): form.getlist(k) for k in form if k.startswith(ANSWER_PREFIX)}
        code = form.get("code")
        context = page_context.set_page(session, settings, user=user, slug=slug, offering_id=_offering_field(form))
        return render(request, "set.html", exc.status_code, math=True, error_problem=problem_id, error=exc.message,
                      typed=typed, typed_code=code if isinstance(code, str) else "", **context)  # fmt: skip
    request.app.state.dispatch(sub_id)
    return RedirectResponse(f"/submissions/{sub_id}", status_code=303)


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


@router.get("/submissions/{submission_id}")
def submission_page(
    request: Request, submission_id: RowId, user: WebUser, session: WebSession, settings: WebSettings
) -> Response:
    """Status (refreshing while it is graded), score, per-check results, feedback and the explanation."""
    page = page_context.submission_page(session, settings, user=user, submission_id=submission_id)
    refresh = 2 if page.sub.status in ("queued", "running") else None
    return render(request, "submission.html", math=True, page=page, refresh=refresh)


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
