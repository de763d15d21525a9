"""Password checks a few at a time (one per CPU core by default), waiting on the event loop: the one limiter of
every login, the API's (``POST /api/v1/auth/login``) and the form's (``POST /login``).

argon2 costs about 30 ms of CPU a check (app.security; 0.2 s for a hash made before). A class logging in at once,
each login checked in its own request thread, would leave no thread for anything else: every other request then
waits for a thread while it holds its pooled connection, until the pool times out. Here a login waits for its turn
as a coroutine (no thread, no connection: ``app.users.service.authenticate`` hands its connection back before
hashing), and a login whose client has gone while it waited is dropped without spending a check.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import ParamSpec, TypeVar
from weakref import WeakKeyDictionary

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from app.errors import DomainError

P = ParamSpec("P")
T = TypeVar("T")


class ClientGone(DomainError):
    """The client closed its connection while its login waited: nobody reads the answer (nginx's 499 in the log)."""

    status_code = 499
    type = "client_closed_request"


class PasswordChecks:
    """At most ``limit`` password checks at once; the rest wait their turn in order of arrival."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = limit or _cores()
        self.waiting = 0  # logins waiting for their turn now
        self.dropped = 0  # logins dropped at their turn because their client had gone
        # One semaphore per event loop: an asyncio.Semaphore belongs to the loop it first waited on (one in a served
        # app; a test client starts a loop of its own each time).
        self._turns: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = WeakKeyDictionary()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._turns.get(loop)
        if semaphore is None:
            semaphore = self._turns[loop] = asyncio.Semaphore(self.limit)
        return semaphore

    async def run(self, request: Request, check: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run ``check`` in a thread at this login's turn; raises ClientGone instead if the client left meanwhile."""
        self.waiting += 1
        try:
            semaphore = self._semaphore()
            await semaphore.acquire()
        finally:
            self.waiting -= 1
        try:
            if await request.is_disconnected():
                self.dropped += 1
                raise ClientGone("the client closed the connection before its login was checked")
            return await run_in_threadpool(check, *args, **kwargs)
        finally:
            semaphore.release()


def _cores() -> int:
    """The cores this process may run on (a container's or taskset's share, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def password_checks(request: Request) -> PasswordChecks:
    """The app's limiter (built with the app from ``AUTOGRADER_PASSWORD_CHECKS``)."""
    checks = request.app.state.password_checks
    assert isinstance(checks, PasswordChecks)
    return checks
