"""Password checks a few at a time (two per CPU core by default), waiting on the event loop: the one limiter of
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
(`bench.bench_class_load`, 300 students with PostgreSQL + Celery on a busy machine: a turn was held 270 ms at p50, of
which the hash 187 ms). Those two steps run in threads of the logins' own (``LOGIN_THREADS`` before the turn and as many
after it, per process), not the request threadpool every other route shares: a class's first login is not queued
behind the submissions already coming in, and a login whose hash is done is not queued behind the reads of the
logins arriving after it.

Two checks per core, not one: the API's other requests share its process, and so its share of the CPU (under the
kernel's autogroups, one share per session, however many threads run in it). On two cores with one check per core,
two hashes and the thread holding the GIL for every other request's Python split that share in three; with two per
core, a class's logins take four fifths of it, ahead of the requests of those already in. The hashes do not take more of
the machine from other processes than before, and each holds its 19 MiB only while it runs (a 300-student class,
PostgreSQL + Celery, on a busy machine: login p95 8.4 s against 15.2 s with one per core, in the same window;
docs/benchmarks.md).
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
        self.limit = limit or _two_per_core()
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
        """Threads of the logins' own: "hash" (``limit``, as the turns), "before" the turn and "after" it
        (LOGIN_THREADS each: a login whose hash is done never waits behind the reads of logins just arrived)."""
        loop = asyncio.get_running_loop()
        lanes = self._lanes.get(loop)
        if lanes is None:
            lanes = self._lanes[loop] = {
                "hash": CapacityLimiter(self.limit),
                "before": CapacityLimiter(LOGIN_THREADS),
                "after": CapacityLimiter(LOGIN_THREADS),
            }
        return lanes[name]

    async def in_login_thread(self, step: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """Run a login's step before its turn (a rate limit, the account's read) in a thread of the logins' lane,
        not the request threadpool every other route shares."""
        return await anyio.to_thread.run_sync(functools.partial(step, *args, **kwargs), limiter=self._lane("before"))

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
        finish = functools.partial(_finish, sessions, cookie, user, checked, password, lifetime_s)
        return await anyio.to_thread.run_sync(finish, limiter=self._lane("after"))


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


def _two_per_core() -> int:
    """Two per core this process may run on (a container's or taskset's share, not the host's count)."""
    if hasattr(os, "sched_getaffinity"):
        return 2 * max(1, len(os.sched_getaffinity(0)))
    return 2 * max(1, os.cpu_count() or 1)


def password_checks(request: Request) -> PasswordChecks:
    """The app's limiter (built with the app from ``AUTOGRADER_PASSWORD_CHECKS``)."""
    checks = request.app.state.password_checks
    assert isinstance(checks, PasswordChecks)
    return checks
