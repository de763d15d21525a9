"""The signed cookie session (Starlette's format and signer), whose cookie may be partitioned for an LMS's iframe.

Starlette's SessionMiddleware writes every cookie with the same attributes. A session started by an LTI launch
inside the LMS's cross-site iframe needs others: a ``SameSite=Lax`` cookie is neither stored nor sent there, and a
browser that blocks third-party cookies refuses a plain ``SameSite=None`` one too. Such a session carries
``PARTITIONED_KEY`` and its cookie is written ``SameSite=None; Secure; Partitioned`` (CHIPS): the browser keeps it
in a jar of the LMS's site, sent only to frames under that LMS, so it works with third-party cookies blocked and an
attacker's page (another top-level site) never gets it sent. Every other session keeps ``SameSite=Lax``.

``Secure`` needs HTTPS, or a loopback host (browsers treat http://localhost and http://127.0.0.1 as secure
contexts and store Secure cookies from them): ``secure_context`` says whether this request's response may set one.
"""

from __future__ import annotations

import ipaddress
import json
from base64 import b64decode, b64encode

import itsdangerous
from itsdangerous.exc import BadSignature
from starlette.datastructures import MutableHeaders
from starlette.middleware.sessions import Session
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

PARTITIONED_KEY = "partitioned"  # the session's entry: write its cookie partitioned (an LTI launch in a frame)


def _loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def secure_context(scope: Scope) -> bool:
    """Whether a ``Secure`` cookie set in answer to this request is kept: HTTPS, or a loopback host."""
    connection = HTTPConnection(scope)
    return connection.url.scheme == "https" or _loopback(connection.url.hostname or "")


class SessionCookie:
    """Starlette's SessionMiddleware (the same cookie format: existing sessions carry on), with the cookie's
    attributes chosen per session: partitioned for a session marked ``PARTITIONED_KEY`` when the request allows
    a Secure cookie, ``SameSite=Lax`` (``Secure`` with ``https_only``) otherwise."""

    def __init__(self, app: ASGIApp, *, secret_key: str, session_cookie: str, max_age: int, https_only: bool) -> None:
        self.app = app
        self.signer = itsdangerous.TimestampSigner(secret_key)
        self.session_cookie = session_cookie
        self.max_age = max_age
        self.lax_flags = "httponly; samesite=lax" + ("; secure" if https_only else "")
        self.partitioned_flags = "httponly; samesite=none; secure; partitioned"

    def _flags(self, scope: Scope, partitioned: bool) -> str:
        return self.partitioned_flags if partitioned and secure_context(scope) else self.lax_flags

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        initial: dict[str, object] = {}
        raw = connection.cookies.get(self.session_cookie)
        if raw is not None:
            try:
                loaded = json.loads(b64decode(self.signer.unsign(raw.encode(), max_age=self.max_age)))
                initial = loaded if isinstance(loaded, dict) else {}
            except (BadSignature, ValueError):
                initial = {}
        scope["session"] = Session(initial)
        was_partitioned = bool(initial.get(PARTITIONED_KEY))

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                session: Session = scope["session"]
                message.setdefault("headers", [])
                headers = MutableHeaders(scope=message)
                if session.accessed:
                    headers.add_vary_header("Cookie")
                if session.modified and session:
                    data = self.signer.sign(b64encode(json.dumps(session).encode())).decode()
                    flags = self._flags(scope, bool(session.get(PARTITIONED_KEY)))
                    headers.append(
                        "Set-Cookie", f"{self.session_cookie}={data}; path=/; Max-Age={self.max_age}; {flags}"
                    )
                elif session.modified and initial:
                    # Emptied (a logout): the cookie is cleared with the attributes it was set with, or the
                    # browser keeps a partitioned one.
                    flags = self._flags(scope, was_partitioned)
                    headers.append(
                        "Set-Cookie",
                        f"{self.session_cookie}=null; path=/; expires=Thu, 01 Jan 1970 00:00:00 GMT; {flags}",
                    )
            await send(message)

        await self.app(scope, receive, send_wrapper)
