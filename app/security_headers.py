"""Security headers on every response: a Content-Security-Policy, X-Content-Type-Options and Referrer-Policy.

The policy: scripts only from this site (the pages load theirs from /static; none runs inline), no plugins, no
<base> from elsewhere, forms post to this site, and only this site may frame the pages (clickjacking). The LTI
pages are the exception an LMS needs: a launch opens them in the platform's iframe, so the origins of the
registered platforms may frame them (``allow_framing``, for the /lti/ pages and, through the cookie, for every
page a launched session sees), and the deep-linking answer posts its form to the platform (``allow_form_target``).
Styles are not restricted: KaTeX and the code editor set inline styles.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, MutableMapping
from typing import Any
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

FRAME_KEY = "frame_origins"  # the cookie session's entry: the origins that may frame this session's pages (LTI)
_FRAME_STATE = "csp_frame_origins"
_FORM_STATE = "csp_form_origins"
# FastAPI's API docs load their scripts from a CDN and start them inline: no script-src there (they run no page of
# ours, and hold no form of ours).
_DOC_PATHS = ("/docs", "/redoc")
_ORIGIN = re.compile(r"^https?://[A-Za-z0-9.\-\[\]:]+$")
HEADERS = {
    "x-content-type-options": "nosniff",
    "referrer-policy": "strict-origin-when-cross-origin",
}


def origin_of(url: object) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, or None: only such a value goes into the policy (no spaces,
    quotes or semicolons that would add a directive)."""
    if not isinstance(url, str):
        return None
    try:
        parts = urlsplit(url.strip())
        port = parts.port  # a bad port is a ValueError
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    origin = f"{parts.scheme}://{host}" + (f":{port}" if port is not None else "")
    return origin.lower() if _ORIGIN.match(origin) else None


def origins(urls: Iterable[object]) -> list[str]:
    """The distinct origins of ``urls``, in order, leaving out what is not an http(s) URL."""
    found: dict[str, None] = {}
    for url in urls:
        origin = origin_of(url)
        if origin is not None:
            found[origin] = None
    return list(found)


def _state(request: Request) -> MutableMapping[str, Any]:
    state: MutableMapping[str, Any] = request.scope.setdefault("state", {})
    return state


def allow_framing(request: Request, urls: Iterable[object]) -> None:
    """Let the origins of ``urls`` frame this response (the registered LMS platforms, on the LTI pages)."""
    state = _state(request)
    state[_FRAME_STATE] = [*state.get(_FRAME_STATE, []), *origins(urls)]


def allow_form_target(request: Request, url: object) -> None:
    """Let this response's form post to ``url``'s origin (the deep-linking answer goes to the platform)."""
    state = _state(request)
    state[_FORM_STATE] = [*state.get(_FORM_STATE, []), *origins([url])]


def policy(*, frame: Iterable[str] = (), form: Iterable[str] = (), scripts: bool = True) -> str:
    directives = [
        "frame-ancestors " + " ".join(["'self'", *dict.fromkeys(frame)]),
        "form-action " + " ".join(["'self'", *dict.fromkeys(form)]),
        "base-uri 'self'",
        "object-src 'none'",
    ]
    if scripts:
        directives.append("script-src 'self'")
    return "; ".join(directives)


def _listed(value: object) -> list[str]:
    # The cookie is signed, so this is what the launch wrote; checked again all the same, as it goes into a header.
    return [o for o in value if isinstance(o, str) and origin_of(o) == o] if isinstance(value, list) else []


class SecurityHeaders:
    """Adds the headers to every response that does not set them itself. Inside the session middleware
    (app.session_cookie): it reads the session (the frame origins of an LTI launch) as the endpoint left it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        state = scope.setdefault("state", {})  # the same dict the endpoint's request.state writes into

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    if name not in headers:
                        headers[name] = value
                if "content-security-policy" not in headers:
                    session = scope.get("session")
                    launched = _listed(session.get(FRAME_KEY)) if isinstance(session, dict) else []
                    headers["content-security-policy"] = policy(
                        frame=[*launched, *_listed(state.get(_FRAME_STATE))],
                        form=_listed(state.get(_FORM_STATE)),
                        scripts=not str(scope.get("path", "")).startswith(_DOC_PATHS),
                    )
            await send(message)

        await self.app(scope, receive, send_with_headers)
