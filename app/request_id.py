"""A request id for every HTTP request: returned in `X-Request-ID`, kept in a context variable for logs and errors.

A client may send its own `X-Request-ID` (a CI job correlating its logs with ours); it is kept only when it is a
short token of safe characters, so it can never inject text into a log line or a header.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar

from starlette.types import ASGIApp, Message, Receive, Scope, Send

HEADER = "x-request-id"
_SAFE = re.compile(r"[A-Za-z0-9._-]{1,64}")

# None outside a request (a worker thread, the CLI): readers must cope with that.
request_id_var: ContextVar[str | None] = ContextVar("request_id", default=None)


def current_request_id() -> str | None:
    return request_id_var.get()


def _incoming(scope: Scope) -> str | None:
    for name, value in scope.get("headers", ()):
        if name == HEADER.encode():
            text = value.decode("latin-1")
            return text if _SAFE.fullmatch(text) else None
    return None


class RequestIdMiddleware:
    """Pure ASGI (no BaseHTTPMiddleware): it must not buffer bodies or break streaming responses."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request_id = _incoming(scope) or uuid.uuid4().hex
        scope.setdefault("state", {})["request_id"] = request_id
        token = request_id_var.set(request_id)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                headers.append((HEADER.encode(), request_id.encode()))
                message = {**message, "headers": headers}
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            request_id_var.reset(token)
