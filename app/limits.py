"""Pure ASGI middleware that refuses input before the app reads it: bodies over a size limit (413, counting what
actually arrives) and a NUL character in the path, the query string or a header (422; PostgreSQL cannot store NUL
in text, so it is refused for every route, the same way on both backends).

The bounds on parsing (JSON depth, YAML, Markdown, CSV) live in graders.input_limits.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qsl

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.error_format import error_bytes
from graders.input_limits import NUL, NUL_MESSAGE


class BodySizeLimit:
    def __init__(self, app: ASGIApp, limit_for: Callable[[Scope], int]) -> None:
        self.app = app
        self.limit_for = limit_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _too_large(send, limit)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _TooLarge
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except _TooLarge:
            if not started:
                await _too_large(send, limit)


class _TooLarge(Exception):
    pass


async def _too_large(send: Send, limit: int) -> None:
    await _send_error(send, 413, error_bytes(413, f"request body is larger than {limit} bytes", ["body"]))


async def _send_error(send: Send, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class RefuseNul:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            loc = _nul_location(scope)
            if loc is not None:
                await _send_error(send, 422, _nul_error(loc))
                return
        await self.app(scope, receive, send)


def _nul_location(scope: Scope) -> list[str] | None:
    if NUL in scope.get("path", ""):
        return ["path"]
    query = scope.get("query_string", b"")
    if b"\x00" in query or b"%00" in query.lower():
        for name, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
            if NUL in name or NUL in value:
                return ["query", name.replace(NUL, "\\x00")]
        return ["query"]
    for name, value in scope.get("headers", ()):
        if b"\x00" in value:
            return ["header", name.decode("latin-1")]
    return None


def _nul_error(loc: list[str]) -> bytes:
    what = "the path" if loc == ["path"] else (loc[-1] if len(loc) > 1 else "the query string")
    return error_bytes(422, f"{what} {NUL_MESSAGE}", loc, type="nul_character")
