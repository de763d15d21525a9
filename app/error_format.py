"""The one JSON shape of every error response, its handlers, and its declaration in the OpenAPI document.

    {"detail": [{"loc": ["body", "answers"], "msg": "...", "type": "invalid"}], "request_id": "3f2a..."}

Service errors (app.errors), request validation, body-parse errors, routing's 404/405, a refused body (413), a busy
database (503) and unhandled exceptions (500) all answer in this shape. ``loc`` says where the input was wrong
(``body``, ``query``, ``path`` or ``header``, then the field; empty when no input is to blame), ``type`` is a
stable machine-readable code, ``msg`` is for people. A 500 never carries the exception's text or a traceback: the
request id is the handle to the server's log line, which has both.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import fastapi.routing
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.utils import is_body_allowed_for_status_code
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.exc import DataError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app.db import database_unavailable, disk_full, exc_text
from app.errors import DomainError
from app.request_id import current_request_id
from graders.input_limits import MAX_ERROR_MESSAGE_CHARS, MAX_ERRORS_LISTED, MAX_JSON_DEPTH

log = logging.getLogger(__name__)

# How long a client should wait before retrying after a 503 (a lock held by a migration or a backup).
RETRY_AFTER_S = 2
# A full disk (app.disk_space's guard, or the database's own refusal): try again once an operator has made room.
DISK_FULL_RETRY_AFTER_S = 60
DISK_FULL_MESSAGE = "the server's disk is full: nothing was stored; try again later"


class ErrorItem(BaseModel):
    loc: list[str | int] = Field(description="where: body/query/path/header, then the field; [] when no input")
    msg: str = Field(description="what is wrong, for people")
    type: str = Field(description="a stable code, e.g. missing, invalid, not_found, body_too_large")


class ErrorBody(BaseModel):
    """Every error response. Some add fields (a refused problem-set upload adds its validation ``report``)."""

    model_config = ConfigDict(extra="allow")
    detail: list[ErrorItem]
    request_id: str | None = Field(description="also in the X-Request-ID header; quote it when reporting a problem")


_DESCRIPTIONS = {
    400: "Bad request: the body could not be parsed",
    401: "Not authenticated: log in or send a valid API token",
    403: "Forbidden: this account or token may not do this",
    404: "Not found (or not yours to see)",
    409: "Conflict with the current state",
    413: "Request body too large",
    415: "Unsupported media type",
    422: "Invalid input: each item names the field",
    429: "Too many requests",
    500: "Internal error: nothing was shown of it; quote the request id",
    503: "Service busy (database locked or unavailable): retry after the Retry-After header's seconds",
    507: "Insufficient storage: the data directory's disk is (nearly) full; nothing was stored",
}
_TYPES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "body_too_large",
    415: "unsupported_media_type",
    422: "invalid",
    429: "too_many_requests",
    500: "internal_error",
    503: "service_unavailable",
    507: "insufficient_storage",
}


def type_for_status(status: int) -> str:
    return _TYPES.get(status, f"http_{status}")


def _short(text: str) -> str:
    return text if len(text) <= MAX_ERROR_MESSAGE_CHARS else text[: MAX_ERROR_MESSAGE_CHARS - 3] + "..."


def error_content(items: Iterable[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """The body: at most MAX_ERRORS_LISTED items (the rest counted), each message bounded."""
    listed: list[dict[str, Any]] = []
    more = 0
    for item in items:
        if len(listed) < MAX_ERRORS_LISTED:
            listed.append({"loc": list(item.get("loc", [])), "msg": _short(str(item["msg"])), "type": item["type"]})
        else:
            more += 1
    if more:
        listed.append({"loc": [], "msg": f"... and {more} more errors", "type": "too_many_errors"})
    return {**extra, "detail": listed, "request_id": current_request_id()}


def error_response(
    status: int, items: Iterable[dict[str, Any]], headers: Mapping[str, str] | None = None, **extra: Any
) -> JSONResponse:
    return JSONResponse(status_code=status, content=error_content(items, **extra), headers=headers)


def error_bytes(status: int, msg: str, loc: Sequence[str | int] = (), type: str | None = None) -> bytes:
    """For pure ASGI middleware that answers before the app (the body-size limit)."""
    content = error_content([{"loc": list(loc), "msg": msg, "type": type or type_for_status(status)}])
    return json.dumps(content).encode()


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def domain_error(request: Request, exc: DomainError) -> JSONResponse:
        location = exc.location
        if exc.field and location == "body":  # services name a field; the request knows where it came from
            location = (
                "path"
                if exc.field in request.path_params
                else "query"
                if exc.field in request.query_params
                else location
            )
        loc = [] if exc.field is None else [location, exc.field] if exc.field else [location]
        # A refusal that ends at a known time (a cooldown) says when, as HTTP clients expect to read it.
        retry_after = getattr(exc, "retry_after", None)
        headers = {"Retry-After": str(retry_after)} if isinstance(retry_after, int) and retry_after > 0 else None
        item = {"loc": loc, "msg": exc.message, "type": exc.type}
        return error_response(exc.status_code, [item], headers, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Never the pydantic "input": it echoes the request (maybe a password) back, and can be megabytes.
        items = (
            {"loc": e.get("loc", ()), "msg": e.get("msg", ""), "type": e.get("type", "invalid")} for e in exc.errors()
        )
        return error_response(422, items)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        status, loc = exc.status_code, []
        msg = exc.detail if isinstance(exc.detail, str) else json.dumps(exc.detail)
        if isinstance(exc.__cause__, RecursionError):  # FastAPI's own body parsing of very deep JSON
            status, loc, msg = 422, ["body"], f"the JSON body is nested more than {MAX_JSON_DEPTH} levels deep"
        elif status == 400:  # a body that could not be parsed (multipart with too many fields, ...)
            loc = ["body"]
        if not is_body_allowed_for_status_code(status):
            return JSONResponse(status_code=status, content=None, headers=exc.headers)
        return error_response(status, [{"loc": loc, "msg": msg, "type": type_for_status(status)}], exc.headers)


class ServerErrors:
    """Pure ASGI, inside RequestIdMiddleware: whatever escapes the app becomes a JSON error with the request id.

    A locked or unreachable database is a 503 with Retry-After (the client's retry will succeed); anything else
    is logged with its traceback and answered with a bare 500 that names nothing of it.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            if started:  # the status line is out; nothing better can be sent
                raise
            response = _response_for(exc, scope)
            await response(scope, receive, send)


def _response_for(exc: Exception, scope: Scope) -> JSONResponse:
    where = f"{scope.get('method')} {scope.get('path')}"
    if isinstance(exc, ClientDisconnect):
        # The client went away before its body was read in full (its own timeout): not a server error. Nobody is
        # there to read this answer; the access log and metrics count a 400.
        log.info("client disconnected before its request body was read: %s", where)
        item = {"loc": ["body"], "msg": "the request body was not received in full", "type": type_for_status(400)}
        return error_response(400, [item])
    if disk_full(exc):
        # A write that raced past app.disk_space's guard, or a database whose disk is elsewhere: the transaction
        # was rolled back, so nothing of the request was stored.
        log.error("the database's disk is full for %s: %s", where, exc_text(exc))
        item = {"loc": [], "msg": DISK_FULL_MESSAGE, "type": "insufficient_storage"}
        return error_response(507, [item], {"Retry-After": str(DISK_FULL_RETRY_AFTER_S)})
    if database_unavailable(exc):
        log.warning("database busy or unavailable for %s: %s", where, exc_text(exc))
        msg = "the database is busy or unavailable; nothing was changed, retry shortly"
        item = {"loc": [], "msg": msg, "type": "service_unavailable"}
        return error_response(503, [item], {"Retry-After": str(RETRY_AFTER_S)})
    if isinstance(exc, DataError):
        # A value the database cannot store got past the schema: the schema should refuse it (a bug to fix), but
        # the client still learns it was its input, and the transaction was rolled back.
        log.error("database refused a value for %s: %s", where, exc.orig)
        item = {"loc": [], "msg": "a value in the request cannot be stored", "type": "unstorable_value"}
        return error_response(422, [item])
    log.exception("unhandled error in %s", where)
    return error_response(500, [{"loc": [], "msg": "internal server error", "type": "internal_error"}])


# --- OpenAPI -------------------------------------------------------------------------------------------------------


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route that can also answer these statuses (the common ones are added for every route)."""
    return {status: {"model": ErrorBody, "description": _DESCRIPTIONS.get(status, "Error")} for status in statuses}


_BODY_METHODS = {"POST", "PUT", "PATCH"}


def _api_routes(app: FastAPI) -> Iterator[Any]:
    """Every API route with its full path. FastAPI 0.16x keeps included routers nested (iter_route_contexts
    flattens them); older versions copy their routes into app.routes."""
    iterate = getattr(fastapi.routing, "iter_route_contexts", None)
    routes: Iterable[Any] = iterate(app.routes) if iterate is not None else app.routes
    for route in routes:
        original = getattr(route, "original_route", route)
        if isinstance(original, APIRoute) and route.include_in_schema:
            yield route


def _statuses_for(route: Any, method: str, authenticate: Callable[..., Any]) -> set[int]:
    """What a route can answer besides its success, from what it depends on."""
    calls = _dependency_calls(route)
    # Any route: a NUL in the path, query or a header (app.limits.RefuseNul), an unexpected error, a busy database.
    statuses = {422, 500, 503}
    if authenticate in calls:
        statuses |= {401, 403}
    if route.dependant.path_params:
        statuses.add(404)
    if method in _BODY_METHODS:
        statuses |= {413, 507}  # 507: app.disk_space refuses writes when the data dir's disk is nearly full
        if route.dependant.body_params:
            statuses.add(400)
    return statuses


def _dependency_calls(route: Any) -> set[Any]:
    calls, stack = set(), [route.dependant]
    while stack:
        dependant = stack.pop()
        if dependant.call is not None:
            calls.add(dependant.call)
        stack.extend(dependant.dependencies)
    return calls


def install_openapi(app: FastAPI, *, authenticate: Callable[..., Any]) -> None:
    """Replace FastAPI's document with one that declares the error shape for every status each route can return.

    ``authenticate``: the dependency that makes a route answer 401 and 403 (app.deps.get_principal), handed in by
    the app factory so that this module, below every domain, does not import the API's dependencies."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
        components = schema.setdefault("components", {}).setdefault("schemas", {})
        error_schema = ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}")
        components.update(error_schema.pop("$defs", {}))
        components["ErrorBody"] = error_schema
        for name in ("HTTPValidationError", "ValidationError"):
            components.pop(name, None)
        ref = {"$ref": "#/components/schemas/ErrorBody"}
        for route in _api_routes(app):
            for method in route.methods:
                operation = schema["paths"].get(route.path_format, {}).get(method.lower())
                if operation is None:
                    continue
                responses = operation.setdefault("responses", {})
                declared = {int(s) for s in responses if str(s).isdigit()}
                for status in _statuses_for(route, method, authenticate) | declared:
                    if status < 400:
                        continue
                    entry = responses.setdefault(str(status), {})
                    if status == 422 or not entry.get("description"):  # FastAPI's 422 says "Validation Error"
                        entry["description"] = _DESCRIPTIONS.get(status, "Error")
                    entry["content"] = {"application/json": {"schema": ref}}
                    if status == 503:
                        entry["headers"] = {
                            "Retry-After": {"description": "seconds to wait", "schema": {"type": "integer"}}
                        }
        app.openapi_schema = schema
        return schema

    app.openapi = openapi  # type: ignore[method-assign]
