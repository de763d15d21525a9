"""The LTI 1.3 browser endpoints: the tool's JWKS, OIDC login initiation and the launch (app/lti does the work).

The platform reaches these from the user's browser: login initiation is a GET or POST from the LMS, the launch a
cross-site form POST carrying the signed id_token (so no CSRF token of ours: the id_token, its nonce and the state
cookie set at login are what authenticate it). The blocking work (database, the platform's keyset over HTTP) runs
in FastAPI's worker threads, never on the event loop: these handlers are plain functions.
"""

from __future__ import annotations

import logging
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse

from app.lti import provision as lti_provision
from app.lti import tool
from app.lti.keys import key_store
from app.web.deps import WebSession, WebSettings, rotate_csrf
from app.web.page_route import WebRoute

log = logging.getLogger(__name__)
router = APIRouter(route_class=WebRoute, tags=["lti"])


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


@router.api_route("/lti/login", methods=["GET", "POST"], summary="OIDC third-party login initiation")
def login(request: Request, params: Params, settings: WebSettings) -> Response:
    """Check the platform is registered, keep a nonce and a state, send the browser to the platform's auth URL."""
    keys = key_store(settings.data_dir, settings.lti_key_grace_s)
    launch_url = settings.public_url.rstrip("/") + "/lti/launch"
    redirect = tool.login_redirect(
        request.app.state.session_factory, keys, params=params, cookies=request.cookies, secure=_secure(request),
        launch_url=launch_url,
    )  # fmt: skip
    response = RedirectResponse(redirect.url, status_code=302)
    for c in redirect.cookies:
        # The launch comes back as a cross-site POST: over HTTPS the state cookie must be SameSite=None to travel.
        response.set_cookie(
            c.name, c.value, max_age=c.max_age, path="/", httponly=True, secure=c.secure,
            samesite="none" if c.secure else "lax",
        )  # fmt: skip
    return response


@router.post("/lti/launch", summary="The LTI launch: validate the id_token, provision, land on the assignment")
def launch(request: Request, params: Params, session: WebSession, settings: WebSettings) -> Response:
    """A refused launch is an error page (401) and a log line, with nothing written."""
    keys = key_store(settings.data_dir, settings.lti_key_grace_s)
    claims = tool.validate_launch(
        request.app.state.session_factory, keys, params=params, cookies=request.cookies, secure=_secure(request)
    )
    done = lti_provision.provision(session, claims)
    request.session.clear()  # a fresh session: nothing from before the launch carries over (session fixation)
    request.session["user_id"] = done.user.id
    rotate_csrf(request)
    log.info(
        "LTI launch of user %s into offering %s", done.user.id, done.context.offering_id,
        extra={"fields": {"event": "lti_launch", "user_id": done.user.id, "offering_id": done.context.offering_id,
                          "role": done.membership.role, "message_type": claims.message_type}},
    )  # fmt: skip
    if claims.message_type == lti_provision.DEEP_LINKING:
        return RedirectResponse(f"/lti/deep-link?launch={claims.launch_id}", status_code=303)
    if done.assignment is not None:
        slug = done.assignment.problem_set.slug
        return RedirectResponse(f"/sets/{slug}?offering={done.context.offering_id}", status_code=303)
    return RedirectResponse(f"/offerings/{done.context.offering_id}", status_code=303)
