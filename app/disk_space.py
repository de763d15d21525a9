"""A full disk refuses writes with 507 and a clear message, never a 500, and never leaves anything half-written.

Two layers. ``DiskSpaceGuard`` (an ASGI middleware) refuses a writing request (POST, PUT, PATCH, DELETE) before it
is read while the data dir's file system has less than ``min_free_disk_bytes`` free: on SQLite that is where the
database lives, and on any backend where problem-set versions are unpacked for grading; refusing early keeps room
for the grades of work already accepted. Reads still work. ``disk_full`` recognises the database's own "disk full"
(SQLite's SQLITE_FULL, PostgreSQL's SQLSTATE 53100) for a write that races past the guard or a database whose disk
is elsewhere; the transaction was rolled back, so nothing of the request was stored.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from fastapi import FastAPI, Request, Response
from sqlalchemy.exc import OperationalError
from starlette.types import ASGIApp, Receive, Scope, Send

log = logging.getLogger(__name__)
RETRY_AFTER_S = 60
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})
MESSAGE = "the server's disk is full: nothing was stored; try again later"


def free_bytes(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def disk_full(exc: BaseException) -> bool:
    """True for the database refusing a write because its disk is full."""
    if not isinstance(exc, OperationalError):
        return False
    orig = exc.orig
    if getattr(orig, "sqlite_errorname", None) == "SQLITE_FULL":
        return True
    return getattr(orig, "sqlstate", None) == "53100" or "database or disk is full" in str(orig)


def insufficient_storage_body() -> bytes:
    return json.dumps({"detail": [{"loc": [], "msg": MESSAGE, "type": "insufficient_storage"}]}).encode()


class DiskSpaceGuard:
    def __init__(self, app: ASGIApp, data_dir: Path, min_free_bytes: int) -> None:
        self.app, self.data_dir, self.min_free_bytes = app, data_dir, min_free_bytes
        self._logged_at = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope.get("method") in WRITES and self._short():
            await send_insufficient_storage(send)
            return
        await self.app(scope, receive, send)

    def _short(self) -> bool:
        if self.min_free_bytes <= 0:
            return False
        try:
            free = free_bytes(self.data_dir)
        except OSError:  # no data dir yet: nothing to guard
            return False
        if free >= self.min_free_bytes:
            return False
        if time.monotonic() - self._logged_at > RETRY_AFTER_S:  # a line a minute, not one per refused request
            self._logged_at = time.monotonic()
            log.error("refusing writes: %d bytes free in %s, below AUTOGRADER_MIN_FREE_DISK_BYTES (%d)",
                      free, self.data_dir, self.min_free_bytes)  # fmt: skip
        return True


async def send_insufficient_storage(send: Send) -> None:
    body = insufficient_storage_body()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(RETRY_AFTER_S).encode()),
    ]
    await send({"type": "http.response.start", "status": 507, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def install(app: FastAPI, data_dir: Path, min_free_bytes: int) -> None:
    """The guard as a middleware, and the database's own "disk full" as a 507 instead of a 500."""
    app.add_middleware(DiskSpaceGuard, data_dir=data_dir, min_free_bytes=min_free_bytes)

    @app.exception_handler(OperationalError)
    async def database_refused(request: Request, exc: OperationalError) -> Response:
        if not disk_full(exc):
            raise exc  # not ours: the generic server-error handling applies
        log.error("the database's disk is full: %s", exc.orig)
        return Response(insufficient_storage_body(), status_code=507, media_type="application/json",
                        headers={"Retry-After": str(RETRY_AFTER_S)})  # fmt: skip
