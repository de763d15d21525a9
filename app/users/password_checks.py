"""Password checks a few at a time (one per CPU core by default), waiting on the event loop: the one limiter of
every login, the API's (``POST /api/v1/auth/login``) and the form's (``POST /login``).

argon2 costs about 30 ms of CPU a check (app.security; 0.2 s for a hash made before). A class logging in at once,
each login checked in its own request thread, would leave no thread for anything else: every other request then
waits for a thread while it holds its pooled connection, until the pool times out. Here a login waits for its turn
as a coroutine (no thread, no connection), and a login whose client has gone while it waited is dropped without
spending a check.

A turn covers the hash alone (``check_login_password``: the verify, and a re-hash of an older hash), never the
database: the account's read before it and the session's write after it (``app.users.service``) take a few
milliseconds on a quiet machine but tens to hundreds on a busy one, where each round trip waits for the GIL behind
every other request's Python. Held across them, a turn sat idle for that long while the queue behind it grew
(`bench.bench_class_load`, 300 students with PostgreSQL + Celery: the read and the write were 15-20 % of a turn at
p50 and more at p95). Those two steps run in threads of the logins' own (``LOGIN_THREADS`` per process), not the
request threadpool every other route shares: a class's first login is not queued behind the submissions already
coming in.
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import Callable, MutableMapping
from typing import Any, ParamSpec, TypeVar
from weakref import WeakKeyDictionary

import anyio.to_thread
from anyio import CapacityLimiter
from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import Request

from app.db import session_scope
from app.errors import DomainError
from app.users import service
from app.users.models import User

P = ParamSpec("P")
T = TypeVar("T")
LOGIN_THREADS = 8  # a login's database steps at once per process: short reads and writes, apart from the hashes


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
        # One semaphore (and one thread limiter) per event loop: each belongs to the loop it first waited on (one
        # in a served app; a test client starts a loop of its own each time).
        self._turns: WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = WeakKeyDictionary()
        self._lanes: WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, CapacityLimiter]] = WeakKeyDictionary()

    def _semaphore(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        semaphore = self._turns.get(loop)
        if semaphore is None:
            semaphore = self._turns[loop] = asyncio.Semaphore(self.limit)
        return semaphore

    def _lane(self, name: str) -> CapacityLimiter:
        """Threads of the logins' own: "hash" (``limit``, as the turns) and "database" (LOGIN_THREADS)."""
        loop = asyncio.get_running_loop()
        lanes = self._lanes.get(loop)
        if lanes is None:
            lanes = self._lanes[loop] = {
                "hash": CapacityLimiter(self.limit),
                "database": CapacityLimiter(LOGIN_THREADS),
            }
        return lanes[name]

    async def in_login_thread(self, step: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a login's database step (a rate limit, the account's read, the session's write) in a thread of the
        logins' lane, not the request threadpool every other route shares."""
        return await anyio.to_thread.run_sync(functools.partial(step, *args, **kwargs), limiter=self._lane("database"))

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
            return await anyio.to_thread.run_sync(functools.partial(check, *args, **kwargs), limiter=self._lane("hash"))
        finally:
            semaphore.release()

    async def log_in(
        self,
        request: Request,
        sessions: sessionmaker[Session],
        cookie: MutableMapping[str, Any],
        *,
        email: str,
        password: str,
        lifetime_s: int,
    ) -> User | None:
        """A login in its three steps (app.users.service): read the account, check the password at this login's
        turn (the hash only), then store a re-hash and start the session, committed before the answer; None for a
        wrong email or password. Each database step in a short transaction of its own, in the logins' lane."""
        if not (email and password):
            return None
        user = await self.in_login_thread(_find, sessions, email)
        checked = await self.run(request, service.check_login_password, user, password)
        if not checked.ok or user is None:
            return None  # a failed login writes nothing
        return await self.in_login_thread(_finish, sessions, cookie, user, checked, password, lifetime_s)


def _find(sessions: sessionmaker[Session], email: str) -> User | None:
    with session_scope(sessions) as session:
        return service.find_for_login(session, email=email)  # its columns stay loaded (expire_on_commit=False)


def _finish(
    sessions: sessionmaker[Session],
    cookie: MutableMapping[str, Any],
    user: User,
    checked: service.PasswordCheck,
    password: str,
    lifetime_s: int,
) -> User | None:
    with session_scope(sessions) as session:
        session.add(user)  # the account read before the check, attached again (no query)
        return service.finish_login(session, cookie, user, checked, password=password, lifetime_s=lifetime_s)


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
