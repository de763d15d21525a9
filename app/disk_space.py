"""A full disk refuses writes with 507 and a clear message, never a 500, and never leaves anything half-written.

Two layers. ``DiskSpaceGuard`` (an ASGI middleware) refuses a writing request (POST, PUT, PATCH, DELETE) before it
is read while the data dir's file system has less than ``min_free_disk_bytes`` free: on SQLite that is where the
database lives, and on any backend where problem-set versions are unpacked for grading; refusing early keeps room
for the grades of work already accepted. Reads still work. The database's own "disk full" (``app.db.disk_full``),
for a write that races past the guard or a database whose disk is elsewhere, is the same 507 through the one
error handling in ``app.error_format``.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from fastapi import FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

from app.error_format import DISK_FULL_MESSAGE, DISK_FULL_RETRY_AFTER_S, error_bytes

log = logging.getLogger(__name__)
RETRY_AFTER_S = DISK_FULL_RETRY_AFTER_S
WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def free_bytes(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def insufficient_storage_body() -> bytes:
    return error_bytes(507, DISK_FULL_MESSAGE, type="insufficient_storage")


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
    """The guard as a middleware (the database's own "disk full" is a 507 in app.error_format)."""
    app.add_middleware(DiskSpaceGuard, data_dir=data_dir, min_free_bytes=min_free_bytes)
