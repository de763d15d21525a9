"""An LTI launch inside the LMS's cross-site iframe: where the OIDC state is kept, the framed session, the way out.

Canvas opens a tool in an iframe by default (and deep linking always), Moodle when the link says "embed". There the
tool is a third party: a ``SameSite=Lax`` cookie is neither stored nor sent, and a browser blocking third-party
cookies (Chromium's incognito, Safari, Firefox's strict mode) refuses every unpartitioned cookie. So:

- **The OIDC state.** When the platform offers LTI platform storage (the login initiation carries
  ``lti_storage_target``: 1EdTech's "OIDC login with LTI client-side postMessages"), the login page puts the state
  and the nonce into the platform's storage (``lti.put_data``) before going on to the platform; the launch page
  reads them back (``lti.get_data``) and, if they match, posts the id_token again from our own origin. The state
  cookie is set as well, partitioned (``SameSite=None; Secure; Partitioned``), kept in the LMS site's jar. A login
  in a frame whose browser keeps neither offers the same login in a new window instead of failing at the launch.
- **The session.** A launch in a frame (the browser says ``Sec-Fetch-Dest: iframe``) gets a partitioned session
  cookie (app.session_cookie) and goes through ``/lti/arrive``, which checks the cookie came back.
- **When the browser stores no cookie in the frame at all**, ``/lti/arrive`` says so and opens the tool in a new
  window with one click, logged in and on the same page: a one-time token (ten minutes, stored hashed) posted from
  our own page, the only place that can post it (the Origin is checked).

The second post of a platform-storage launch and the new window's post carry no session and no CSRF token (there is
no cookie to hold one): both are refused unless the browser says they come from this site (``Origin``,
``Sec-Fetch-Site``), which a form on another site cannot fake; the launch is then validated as any other (signature,
nonce used once, audience, deployment).
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Mapping
from datetime import timedelta
from typing import Annotated, Any
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import RedirectResponse
from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.db import utcnow
from app.lti import registration
from app.lti.adapters import CookieToSet
from app.lti.models import LtiLaunchState, LtiPlatform
from app.lti.tool import LaunchRefused, LoginRedirect
from app.security_headers import allow_framing, origin_of
from app.session_cookie import PARTITIONED_KEY, secure_context
from app.users import login_sessions
from app.users.models import User
from app.users.service import start_session
from app.web.deps import LimitUnauthenticated, WebSession, WebSettings, rotate_csrf
from app.web.page_route import WebRoute
from app.web.rendering import render

STORAGE_TARGET = "lti_storage_target"  # the platform's parameter: the frame that answers lti.put_data/get_data
VERIFIED_FIELD = "lti_storage_verified"  # our launch page's second post: the state came back from the platform
ARRIVE_TTL_S = 600
_ARRIVE_PREFIX = "lti-arrive-"
# What an arrival carries over into the new window's session; the login key and the CSRF token are its own.
_SESSION_OWN = {login_sessions.KEY, "csrf", PARTITIONED_KEY}


def _platform_frames(request: Request, session: WebSession) -> None:
    allow_framing(request, registration.platform_urls(session))


router = APIRouter(route_class=WebRoute, tags=["lti"], dependencies=[Depends(_platform_frames)])


def framed(request: Request) -> bool:
    """Whether the browser loads this response into a frame (Sec-Fetch-Dest; a browser that does not say is taken
    to be at the top, as before)."""
    return request.headers.get("sec-fetch-dest", "").lower() in ("iframe", "frame")


def same_origin(request: Request, settings: Settings) -> bool:
    """Whether the browser says this request comes from a page of this tool: its Origin is the public URL's (or the
    request's own), and Sec-Fetch-Site, where sent, is same-origin. A form on another site can fake neither."""
    origin = request.headers.get("origin", "")
    ours = {origin_of(settings.public_url), origin_of(str(request.base_url))} - {None}
    site = request.headers.get("sec-fetch-site", "same-origin").lower()
    return bool(origin) and origin.lower() in ours and site == "same-origin"


# --- the OIDC login: the state cookie, and the platform's storage ----------------------------------------------


def set_state_cookies(request: Request, response: Response, cookies: list[CookieToSet]) -> None:
    """pylti1p3's state cookie: partitioned where a Secure cookie is kept (HTTPS, loopback), so it is stored in the
    LMS's frame with third-party cookies blocked and sent with the platform's cross-site POST back; elsewhere
    (plain http on another host) SameSite=Lax, which only a top-level, same-site launch gets back."""
    secure = secure_context(request.scope)
    for c in cookies:
        # Written out: Starlette's set_cookie writes Partitioned only on Python 3.14. The name and value are
        # pylti1p3's ("lti1p3-state-<uuid>"), no character that needs quoting.
        parts = [f"{c.name}={c.value}", "Path=/", "HttpOnly"]
        parts += [f"Max-Age={c.max_age}"] if c.max_age is not None else []
        parts += ["SameSite=None", "Secure", "Partitioned"] if secure else ["SameSite=Lax"]
        response.headers.append("set-cookie", "; ".join(parts))


def login_response(request: Request, redirect: LoginRedirect, params: Mapping[str, str]) -> Response:
    """The answer to a login initiation: at the top, the redirect to the platform's auth URL; in a frame, a page
    (static/lti_storage.js) that puts the state and the nonce into the platform's storage when it offers one, else
    checks that the frame keeps a cookie, and goes on to the platform, or, when neither works, offers the same
    login initiation in a new window (one click; the launch there lands on the same page)."""
    target = params.get(STORAGE_TARGET, "")
    if target or framed(request):
        query = {k: v[0] for k, v in parse_qs(urlsplit(redirect.url).query).items()}
        again = urlencode({k: v for k, v in params.items() if k != STORAGE_TARGET})
        response: Response = render(
            request, "lti/login_frame.html", mode="put" if target else "check", target=target,
            platform_origin=origin_of(redirect.url) or "", state=query.get("state", ""),
            nonce=query.get("nonce", ""), url=redirect.url, window_url=f"/lti/login?{again}",
            secure=secure_context(request.scope),
        )  # fmt: skip
    else:
        response = RedirectResponse(redirect.url, status_code=302)
    set_state_cookies(request, response, redirect.cookies)
    return response


def _unverified(params: Mapping[str, str]) -> dict[str, Any]:
    """The id_token's claims, unverified: only to find which platform to ask (it is validated afterwards)."""
    try:
        body = jwt.decode(params.get("id_token", ""), options={"verify_signature": False})
    except jwt.InvalidTokenError as exc:
        raise LaunchRefused(f"LTI launch refused: the id_token cannot be read ({exc})") from exc
    return body if isinstance(body, dict) else {}


def _platform_origin(session: Session, body: Mapping[str, Any]) -> str | None:
    aud = body.get("aud")
    client_ids = [str(a) for a in aud] if isinstance(aud, list) else [str(aud)]
    rows = session.scalars(select(LtiPlatform).where(LtiPlatform.issuer == str(body.get("iss") or "")))
    for platform in rows:
        if platform.client_id in client_ids:
            return origin_of(platform.auth_login_url)
    return None


def storage_check(request: Request, params: Mapping[str, str], session: Session) -> Response | None:
    """The launch's first post when the state must come from the platform's storage (it offers one and the state
    cookie did not come back): a page that asks the platform for the state and the nonce and, when they match,
    posts the id_token again from this site. None: the launch goes on (a cookie, or the page's second post)."""
    target, state = params.get(STORAGE_TARGET, ""), params.get("state", "")
    if not target or not state or params.get(VERIFIED_FIELD) or request.cookies.get(f"lti1p3-{state}") == state:
        return None
    body = _unverified(params)
    origin = _platform_origin(session, body)
    if origin is None:
        return None  # an unknown platform: refused by the validation, as without storage
    return render(
        request, "lti/storage_launch.html", target=target, platform_origin=origin, state=state,
        nonce=str(body.get("nonce") or ""), id_token=params.get("id_token", ""),
    )  # fmt: skip


def launch_cookies(request: Request, params: Mapping[str, str], settings: Settings) -> dict[str, str]:
    """The cookies the launch validation reads: the request's, and, on our launch page's second post (from this
    site only), the state the platform's storage gave back in place of the state cookie."""
    cookies = dict(request.cookies)
    if params.get(VERIFIED_FIELD):
        if not same_origin(request, settings):
            raise LaunchRefused("LTI launch refused: the platform storage check did not come from this site")
        state = params.get("state", "")
        cookies[f"lti1p3-{state}"] = state
    return cookies


# --- the framed session and the way out: /lti/arrive --------------------------------------------------------------


def mark_framed(request: Request) -> None:
    """A session started by a launch in a frame: its cookie is partitioned (app.session_cookie)."""
    if framed(request):
        request.session[PARTITIONED_KEY] = True


def _key(token: str) -> str:
    return _ARRIVE_PREFIX + hashlib.sha256(token.encode()).hexdigest()


def arrival(request: Request, session: Session, response: Response) -> Response:
    """A launch in a frame lands through /lti/arrive (is the session cookie back?); at the top it lands directly.
    The token stands for this launch's session for ten minutes, once: its user, where it lands, its entries.
    Written through the request's session (SQLite has one writer, and the launch's transaction holds it)."""
    location = response.headers.get("location", "")
    found = login_sessions.find(session, request.session)
    if not framed(request) or not location.startswith("/") or found is None:
        return response
    token = secrets.token_urlsafe(32)
    entries = {k: v for k, v in request.session.items() if k not in _SESSION_OWN}
    session.add(
        LtiLaunchState(
            key=_key(token), value={"user_id": found.user_id, "to": location, "session": entries},
            expires_at=utcnow() + timedelta(seconds=ARRIVE_TTL_S),
        )
    )  # fmt: skip
    response.headers["location"] = f"/lti/arrive?t={token}"
    return response


def _arrival_of(session: Session, token: str) -> dict[str, Any]:
    row = session.get(LtiLaunchState, _key(token)) if 0 < len(token) <= 100 else None
    value = row.value if row is not None and row.expires_at > utcnow() else None
    if not isinstance(value, dict) or not isinstance(value.get("user_id"), int) or not str(value.get("to", "")):
        raise LaunchRefused("this launch is over or unknown; open the tool from the LMS again")
    return value


def _consume(session: Session, token: str) -> bool:
    """Delete the token; True for one caller only (the DELETE's row count)."""
    result = session.execute(
        delete(LtiLaunchState).where(LtiLaunchState.key == _key(token), LtiLaunchState.expires_at > utcnow())
    )
    return bool(getattr(result, "rowcount", 0) == 1)


@router.get("/lti/arrive", dependencies=[LimitUnauthenticated])
def arrive(request: Request, session: WebSession, t: str = "") -> Response:
    """Where a framed launch lands: on its page if the session cookie came back, else a page that says the browser
    keeps no cookie here and opens the tool in a new window."""
    value = _arrival_of(session, t)
    found = login_sessions.find(session, request.session)
    if found is not None and found.user_id == value["user_id"]:
        _consume(session, t)
        return RedirectResponse(str(value["to"]), status_code=303)
    return render(request, "lti/arrive.html", token=t)


async def _posted_token(request: Request) -> str:
    form = await request.form()
    return str(form.get("t") or "")


@router.post("/lti/arrive", dependencies=[LimitUnauthenticated])
def arrive_in_window(
    request: Request, token: Annotated[str, Depends(_posted_token)], session: WebSession, settings: WebSettings
) -> Response:
    """The new window: the launch's session, started here (a first-party cookie), on the launch's page."""
    if not same_origin(request, settings):
        raise LaunchRefused("this window was not opened from the tool's own page; open the tool from the LMS again")
    value = _arrival_of(session, token)
    if not _consume(session, token):
        raise LaunchRefused("this launch is over or unknown; open the tool from the LMS again")
    user = session.get(User, value["user_id"])
    if user is None or not user.is_active:
        raise LaunchRefused("this account cannot log in; ask your instructor")
    start_session(session, request.session, user, lifetime_s=settings.session_max_age_s)
    rotate_csrf(request)
    entries = value.get("session")
    for k, v in (entries if isinstance(entries, dict) else {}).items():
        if k not in _SESSION_OWN:
            request.session[k] = v
    return RedirectResponse(str(value["to"]), status_code=303)
