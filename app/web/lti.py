"""The LTI 1.3 browser endpoints: the tool's JWKS, OIDC login initiation and the launch (app/lti does the work).

The platform reaches these from the user's browser: login initiation is a GET or POST from the LMS, the launch a
cross-site form POST carrying the signed id_token (so no CSRF token of ours: the id_token, its nonce and the state
set at login, in a cookie or the platform's storage, are what authenticate it; app/web/lti_frame.py has the
iframe). The blocking work (database, the platform's keyset over HTTP) runs in FastAPI's worker threads, never on
the event loop: these handlers are plain functions.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from sqlalchemy import select
from sqlalchemy.orm import Session
from starlette.background import BackgroundTask

from app.config import Settings
from app.courses import service as courses
from app.courses.access import access_for
from app.courses.models import MemberRole, Offering
from app.courses.permissions import STAFF_ROLES, Action
from app.deps import RowId
from app.errors import Forbidden, Invalid, NotFound
from app.lti import deep_linking, passback, registration, roster_sync, tool
from app.lti import provision as lti_provision
from app.lti.adapters import DatabaseToolConf
from app.lti.keys import KeyStore, key_store
from app.lti.models import LtiContext
from app.security_headers import FRAME_KEY, allow_form_target, allow_framing, origins
from app.users.models import User
from app.users.service import start_session
from app.web import lti_frame
from app.web.deps import (
    CheckedForm,
    LimitUnauthenticated,
    WebInstructor,
    WebSession,
    WebSettings,
    WebUser,
    rotate_csrf,
)
from app.web.i18n import for_request
from app.web.page_route import WebRoute
from app.web.rendering import render

log = logging.getLogger(__name__)
DEEP_LINK_KEY = "lti_deep_link"
LINK_KEY = "lti_link_launch"


def _platform_frames(request: Request, session: WebSession) -> None:
    """The /lti/ pages (the launch, its error page, the link and deep-link choices) open in the LMS's iframe: the
    registered platforms may frame them (app.security_headers)."""
    if request.url.path.startswith("/lti/") and request.url.path != "/lti/jwks":
        allow_framing(request, registration.platform_urls(session))


router = APIRouter(route_class=WebRoute, tags=["lti"], dependencies=[Depends(_platform_frames)])
_PRESENTATION = "https://purl.imsglobal.org/spec/lti/claim/launch_presentation"


def _start(request: Request, session: Session, user: User, claims: tool.Launch, settings: Settings) -> None:
    """A fresh session for the launched user (nothing from before the launch carries over: session fixation), whose
    pages the launching platform may frame: its registered URLs' origins, and the LMS page it says it returns to
    (a signed claim; Canvas's issuer is not the school's own domain that frames the tool)."""
    start_session(session, request.session, user, lifetime_s=settings.session_max_age_s)
    rotate_csrf(request)
    lti_frame.mark_framed(request)  # in the LMS's iframe: a partitioned cookie
    presentation = claims.body.get(_PRESENTATION)
    returns = [presentation.get("return_url")] if isinstance(presentation, dict) else []
    returns.append((claims.deep_linking or {}).get("deep_link_return_url"))
    request.session[FRAME_KEY] = origins([claims.issuer, *registration.platform_urls(session, claims.issuer), *returns])


async def lti_params(request: Request) -> dict[str, str]:
    """The query string and, on a POST, the form: platforms use either for login initiation."""
    params = {k: v for k, v in request.query_params.items()}
    if request.method == "POST":
        form = await request.form()
        params.update({k: v for k, v in form.items() if isinstance(v, str)})
    return params


Params = Annotated[dict[str, str], Depends(lti_params)]


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


@router.get("/lti/jwks", summary="The tool's public keys (JWKS) that platforms verify our signatures with")
def jwks(settings: WebSettings) -> Response:
    """The current key and any rotated one still in its grace period."""
    keys = key_store(settings.data_dir, settings.lti_key_grace_s)
    return JSONResponse(keys.jwks(), headers={"Cache-Control": "public, max-age=300"})


@router.api_route(
    "/lti/login", methods=["GET", "POST"], summary="OIDC third-party login initiation",
    dependencies=[LimitUnauthenticated],
)  # fmt: skip
def login(request: Request, params: Params, settings: WebSettings) -> Response:
    """Check the platform is registered, keep a nonce and a state, send the browser to the platform's auth URL."""
    keys = key_store(settings.data_dir, settings.lti_key_grace_s)
    launch_url = settings.public_url.rstrip("/") + "/lti/launch"
    redirect = tool.login_redirect(
        request.app.state.session_factory, keys, params=params, cookies=request.cookies, secure=_secure(request),
        launch_url=launch_url,
    )  # fmt: skip
    # A redirect, or a page putting the state into the platform's storage first; the state cookie either way.
    return lti_frame.login_response(request, redirect, params)


@router.post(
    "/lti/launch", summary="The LTI launch: validate the id_token, provision, land on the assignment",
    dependencies=[LimitUnauthenticated],
)  # fmt: skip
def launch(request: Request, params: Params, session: WebSession, settings: WebSettings) -> Response:
    """A refused launch is an error page (401) and a log line, with nothing written."""
    check = lti_frame.storage_check(request, params, session)  # the state in the platform's storage, not a cookie
    if check is not None:
        return check
    keys = key_store(settings.data_dir, settings.lti_key_grace_s)
    claims = tool.validate_launch(
        request.app.state.session_factory, keys, params=params, secure=_secure(request),
        cookies=lti_frame.launch_cookies(request, params, settings),
        leeway_s=settings.lti_clock_leeway_s,
        tool_url=settings.public_url,  # target_link_uri must be on this tool
    )  # fmt: skip
    choices = lti_provision.link_choices(session, claims)
    if choices:
        # An LMS course not linked yet, launched by an instructor who teaches offerings here: they choose first
        # (link it to one of theirs, or a new offering). Nothing of the course is written until they do.
        user = lti_provision.existing_lti_user(session, claims)
        _start(request, session, user, claims, settings)
        request.session[LINK_KEY] = claims.launch_id
        return lti_frame.arrival(request, session, RedirectResponse("/lti/link", status_code=303))
    done = lti_provision.provision(session, claims)
    session.commit()  # now: the roster sync below runs after the response, in a session of its own
    _start(request, session, done.user, claims, settings)
    return lti_frame.arrival(request, session, _land(request, done, claims, keys))  # in a frame: is the cookie back?


def _land(request: Request, done: lti_provision.Provisioned, claims: tool.Launch, keys: KeyStore) -> Response:
    """Where a provisioned launch goes: the deep-link picker, the assignment or the offering (and, for staff, a
    roster sync after the response)."""
    log.info(
        "LTI launch of user %s into offering %s", done.user.id, done.context.offering_id,
        extra={"fields": {"event": "lti_launch", "user_id": done.user.id, "offering_id": done.context.offering_id,
                          "role": done.membership.role, "message_type": claims.message_type}},
    )  # fmt: skip
    if claims.message_type == lti_provision.DEEP_LINKING:
        # Bound to this browser's new session: only the instructor who launched may answer this deep link.
        request.session[DEEP_LINK_KEY] = {"launch": claims.launch_id, "offering": done.context.offering_id}
        return RedirectResponse("/lti/deep-link", status_code=303)
    target = f"/offerings/{done.context.offering_id}"
    staff = MemberRole(done.membership.role) in STAFF_ROLES
    # A student's link to a draft lands on the offering, which lists no draft: the set page would answer 404.
    if done.assignment is not None and (staff or done.assignment.published_at is not None):
        target = f"/sets/{done.assignment.problem_set.slug}?offering={done.context.offering_id}"
    response = RedirectResponse(target, status_code=303)
    if staff and done.context.memberships_url:
        # A staff launch refreshes the roster, after the response (the instructor does not wait for the LMS).
        factory = request.app.state.session_factory
        response.background = BackgroundTask(
            roster_sync.sync_in_background, factory, DatabaseToolConf(factory, keys), done.context.offering_id
        )
    return response


# --- the first instructor launch from an LMS course: link it to an offering of theirs, or a new one -------------


def _link_launch(request: Request, session: Session, user: User, settings: Settings) -> tuple[tool.Launch, KeyStore]:
    launch_id = request.session.get(LINK_KEY)
    if not isinstance(launch_id, str):
        raise tool.LaunchRefused("no LMS launch waits for a choice in this session; open the tool from the LMS again")
    keys = key_store(settings.data_dir, settings.lti_key_grace_s)
    claims = tool.cached_launch(request.app.state.session_factory, keys, launch_id)
    if lti_provision.existing_lti_user(session, claims).id != user.id:
        raise tool.LaunchRefused("this launch belongs to another account; open the tool from the LMS again")
    return claims, keys


@router.get("/lti/link")
def link_page(request: Request, user: WebUser, session: WebSession, settings: WebSettings) -> Response:
    """Link the LMS course to one of the offerings this instructor teaches, or make a new offering for it."""
    claims, _ = _link_launch(request, session, user, settings)
    return render(
        request, "lti/link.html", offerings=lti_provision.instructed_offerings(session, user.id),
        lms_course=claims.context_title or claims.context_label or claims.context_id,
    )  # fmt: skip


@router.post("/lti/link")
def link_answer(
    request: Request, form: CheckedForm, user: WebUser, session: WebSession, settings: WebSettings
) -> Response:
    """Provision the waiting launch into the chosen offering (only one the user instructs) or a new one."""
    claims, keys = _link_launch(request, session, user, settings)
    choice = str(form.get("offering") or "")
    if choice != "new" and not choice.isdigit():
        raise Invalid("choose an offering, or a new one", field="offering")
    done = lti_provision.provision(session, claims, link_to=None if choice == "new" else int(choice))
    session.commit()
    request.session.pop(LINK_KEY, None)  # one answer per launch
    return _land(request, done, claims, keys)


# --- the instructor's LMS page of an offering: grade passback state, retry, roster sync ----------------------------


def _lms_page(request: Request, session: Session, user: User, offering_id: int) -> Response:
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.GRADEBOOK)
    values = registration.tool_values(request.app.state.settings)
    return render(
        request, "lti/offering.html", offering=offering, rows=passback.offering_passbacks(session, offering.id),
        values=values,
        contexts=roster_sync.contexts_of(session, offering.id), can_retry=access.can(offering.id, Action.GRADE),
        can_sync=access.can(offering.id, Action.ROSTER),
        all_offerings=courses_list(session) if user.is_admin else [], sync=roster_sync.sync_state(session, offering.id),
    )  # fmt: skip


def courses_list(session: Session) -> list[Offering]:
    """Every offering, for an admin's relink form."""
    return list(session.scalars(select(Offering).order_by(Offering.id)))


@router.get("/offerings/{offering_id}/lti")
def lms_page(request: Request, offering_id: RowId, user: WebInstructor, session: WebSession) -> Response:
    """Each student's grade passback (state, attempts, last error) and the linked LMS courses (staff)."""
    return _lms_page(request, session, user, offering_id)


@router.post("/offerings/{offering_id}/lti/passback/{passback_id}/retry")
def retry_passback(
    request: Request, offering_id: RowId, passback_id: RowId, form: CheckedForm, user: WebInstructor,
    session: WebSession,
) -> Response:  # fmt: skip
    """Send a student's score to the LMS again now (instructors and TAs)."""
    access = access_for(session, user)
    courses.get_offering(session, access, offering_id, Action.GRADE)
    passback.retry(session, passback.passback_in(session, offering_id, passback_id))
    session.commit()
    return RedirectResponse(f"/offerings/{offering_id}/lti", status_code=303)


@router.post("/offerings/{offering_id}/lti/sync")
def sync_roster(
    request: Request, offering_id: RowId, form: CheckedForm, user: WebInstructor, session: WebSession
) -> Response:
    """Queue a roster sync from the LMS (NRPS, every page), run by the LTI job; the page shows its state."""
    access = access_for(session, user)
    courses.get_offering(session, access, offering_id, Action.ROSTER)
    roster_sync.queue_sync(session, offering_id)
    session.commit()
    return RedirectResponse(f"/offerings/{offering_id}/lti", status_code=303)


@router.post("/offerings/{offering_id}/lti/contexts/{context_id}/link")
def relink_context(
    request: Request, offering_id: RowId, context_id: RowId, form: CheckedForm, user: WebInstructor,
    session: WebSession,
) -> Response:  # fmt: skip
    """Move a linked LMS course to another offering (admins): its launches and resource links land there."""
    if not user.is_admin:
        raise Forbidden("only admins move an LMS course to another offering")
    ctx = session.get(LtiContext, context_id)
    if ctx is None or ctx.offering_id != offering_id:
        raise NotFound(f"no LMS course {context_id} in this offering", field="context_id", location="path")
    target_id = str(form.get("offering") or "")
    target = session.get(Offering, int(target_id)) if target_id.isdigit() else None
    if target is None:
        raise Invalid("choose an offering to link the LMS course to", field="offering")
    lti_provision.relink(session, ctx, target)
    session.commit()
    log.info("LTI context %s moved from offering %s to %s by admin %s", ctx.id, offering_id, target.id, user.id)
    return RedirectResponse(f"/offerings/{target.id}/lti", status_code=303)


# --- deep linking: the instructor picks a set inside the LMS ------------------------------------------------------


def _deep_link_state(request: Request) -> tuple[str, int]:
    state = request.session.get(DEEP_LINK_KEY)
    if (
        not isinstance(state, dict)
        or not isinstance(state.get("launch"), str)
        or not isinstance(state.get("offering"), int)
    ):
        raise tool.LaunchRefused("no deep-linking launch in this session; open the tool from the LMS again")
    return state["launch"], state["offering"]


@router.get("/lti/deep-link")
def deep_link_page(request: Request, user: WebInstructor, session: WebSession) -> Response:
    """The sets this instructor may put into the LMS course."""
    _, offering_id = _deep_link_state(request)
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.ASSIGNMENTS)
    return render(request, "lti/deep_link.html", offering=offering, sets=deep_linking.choices(session, access))


@router.post("/lti/deep-link")
def deep_link_answer(
    request: Request, form: CheckedForm, user: WebInstructor, session: WebSession, settings: WebSettings
) -> Response:
    """Assign the chosen set and send the LMS the signed deep-linking response (an auto-posting form)."""
    launch_id, offering_id = _deep_link_state(request)
    access = access_for(session, user)
    offering = courses.get_offering(session, access, offering_id, Action.ASSIGNMENTS)
    problem_set = courses.problem_set_by_slug(session, str(form.get("problem_set") or ""))
    if not courses.may_assign(session, access, problem_set):
        raise Forbidden(for_request(request).gettext("That set belongs to a course you do not teach."))
    score_maximum = deep_linking.max_score(session, offering, problem_set)
    session.commit()  # before respond(): it uses the launch up in a transaction of its own (SQLite: one writer)
    keys = key_store(settings.data_dir, settings.lti_key_grace_s)
    answer = deep_linking.respond(
        request.app.state.session_factory, keys, launch_id=launch_id, problem_set=problem_set,
        score_maximum=score_maximum, launch_url=settings.public_url.rstrip("/") + "/lti/launch",
    )  # fmt: skip
    request.session.pop(DEEP_LINK_KEY, None)  # one answer per deep-linking launch
    allow_form_target(request, answer.return_url)  # the page's form posts the answer to the LMS
    return render(request, "lti/deep_link_post.html", return_url=answer.return_url, jwt=answer.jwt)
