"""One structured log line per HTTP request (and its duration in the metrics), written when the response is done.

The line names the route *template* (``/api/v1/submissions/{submission_id}``), never the raw path or the query
string, and no header: nothing a client sends as a secret (a token, a cookie, a password) can reach the log. The
user id, the submission id and the problem are what the handlers put on ``request.state`` (see ``note``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from fastapi import Request, routing
from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("app.access")
UNMATCHED = "<unmatched>"
# What a handler may note on the request for its log line (request.state.log_fields).
NOTED = ("user_id", "token_id", "submission_id", "problem_set", "problem", "verdict", "limit")

# Told (method, route template, status, seconds) of every finished request: the metrics' HTTP histogram.
Observer = Callable[[str, str, int, float], None]


def note(request: Request, **fields: Any) -> None:
    """Add fields to this request's log line (only the names in NOTED are written)."""
    noted = request.scope.setdefault("state", {}).setdefault("log_fields", {})
    noted.update({k: v for k, v in fields.items() if k in NOTED})


def route_template(scope: Scope, full_paths: dict[int, str]) -> str:
    """The matched route's template with its routers' prefixes (``/api/v1/submissions``, not ``/submissions``)."""
    route = scope.get("route")
    if route is None:
        return UNMATCHED
    path = full_paths.get(id(route), getattr(route, "path", None))
    return path if isinstance(path, str) else UNMATCHED


def _full_paths(app: Any) -> dict[int, str]:
    # FastAPI keeps an included router's routes with their own paths; iter_route_contexts (what OpenAPI uses)
    # gives each its full path. Older FastAPI copies routes with the prefix applied, so route.path is full there.
    contexts = getattr(routing, "iter_route_contexts", None)
    if contexts is None or app is None:
        return {}
    return {id(ctx.original_route): ctx.path for ctx in contexts(app.routes)}


class AccessLog:
    """Pure ASGI, inside RequestIdMiddleware so the line carries the request id."""

    def __init__(self, app: ASGIApp, observers: tuple[Observer, ...] = ()) -> None:
        self.app, self.observers = app, observers
        self._full_paths: dict[int, str] | None = None  # built on the first request, once all routes exist

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500  # an exception before the response started is a 500 to the client

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_status)
        finally:
            elapsed = time.perf_counter() - start
            if self._full_paths is None:
                self._full_paths = _full_paths(scope.get("app"))
            route = route_template(scope, self._full_paths)
            method = str(scope.get("method", ""))
            fields: dict[str, Any] = {"event": "http_request", "method": method, "route": route, "status": status}
            fields["duration_ms"] = round(elapsed * 1000, 2)
            state = scope.get("state") or {}
            fields.update(state.get("log_fields") or {})
            path_params = scope.get("path_params") or {}
            raw_id = str(path_params.get("submission_id", ""))
            if raw_id.isdigit() and len(raw_id) < 12:  # the raw path text: only a plain number is an id
                fields.setdefault("submission_id", int(raw_id))
            log.info("%s %s %s", method, route, status, extra={"fields": fields})
            for observe in self.observers:
                observe(method, route, status, elapsed)
