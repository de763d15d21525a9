"""The login queue (app.users.password_checks): password checks a few at a time for the API and the login form
alike, a login whose client has gone by its turn spends no check, a turn is held by the hash alone (not the
account's read nor the session's write), and a login's steps never wait for the request threadpool.

One real uvicorn on 127.0.0.1 serves the real app for the module (limit: 2 checks at once). argon2's own
``PasswordHasher.verify`` is instrumented (a subclass counting the checks running and holding them at a gate the
test opens), so every login goes through the real route, limiter, service and hashing; the test only waits, with
generous bounds, for states it can observe (checks running, logins waiting), never for a time to pass.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import anyio.to_thread
import pytest
import requests
import uvicorn
from anyio import CapacityLimiter
from argon2 import PasswordHasher

from app import security
from app.config import Settings
from app.courses import accounts as account_service
from app.main import create_app
from app.migrate import upgrade
from app.users import service as users
from app.users.models import Role
from app.users.password_checks import LOGIN_THREADS, PasswordChecks
from tests.conftest import FIXTURE_SETS

LIMIT = 2
BOUND_S = 60.0  # a generous wait for a state that comes at once on a quiet machine; a hang fails here


class GatedHasher(PasswordHasher):
    """The real argon2 verify, counted, and held at a gate while the test closes it."""

    def __init__(self) -> None:
        # The parameters the accounts were hashed with (the suite's, tests/conftest.py): no login re-hashes here.
        current = security._hasher
        super().__init__(
            time_cost=current.time_cost,
            memory_cost=current.memory_cost,
            parallelism=current.parallelism,
            type=current.type,
        )
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.calls = 0
        self.gate = threading.Event()
        self.gate.set()

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:
        with self.lock:
            self.calls += 1
            self.running += 1
            self.most = max(self.most, self.running)
        try:
            if not self.gate.wait(BOUND_S):
                raise AssertionError("the test never opened the gate")
            return super().verify(hash, password)
        finally:
            with self.lock:
                self.running -= 1


def wait_until(condition: Callable[[], bool]) -> bool:
    deadline = time.monotonic() + BOUND_S
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root: Path = tmp_path_factory.mktemp("login-queue")
    url = f"sqlite:///{root / 'autograder.db'}"
    upgrade(url)
    settings = Settings(
        data_dir=root / "data",
        database_url=url,
        secret_key="queue-secret-" + "x" * 32,
        workers=0,
        problems_dir=FIXTURE_SETS,
        load_problems_on_start=False,
        prewarm_sandbox=False,
        password_checks=LIMIT,
        rate_logins_per_address=0,  # every login comes from 127.0.0.1; the per-account limit stays on
    )
    app = create_app(settings)
    accounts: list[tuple[str, str]] = []
    with app.state.session_factory() as session:
        for n in range(48):
            user, password = account_service.create_user(session, email=f"s{n}@example.com", role=Role.STUDENT)
            accounts.append((user.email, password))
        session.commit()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on", loop="asyncio"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        assert wait_until(lambda: server.started), "uvicorn did not start"
        yield {
            "base": f"http://127.0.0.1:{port}",
            "port": port,
            "app": app,
            "server": server,
            "accounts": iter(accounts),
        }
    finally:
        server.should_exit = True
        thread.join(BOUND_S)
        listener.close()


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> GatedHasher:
    gated = GatedHasher()
    monkeypatch.setattr(security, "_hasher", gated)
    return gated


def checks_of(live: dict[str, Any]) -> PasswordChecks:
    checks = live["app"].state.password_checks
    assert isinstance(checks, PasswordChecks) and checks.limit == LIMIT
    return checks


def form_session(base: str) -> tuple[requests.Session, str]:
    """A browser's session on the login page: its cookie and the form's CSRF token."""
    browser = requests.Session()
    page = browser.get(f"{base}/login", timeout=BOUND_S)
    match = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert page.status_code == 200 and match, page.text
    return browser, match.group(1)


def test_a_class_logging_in_at_once_is_checked_at_most_n_at_a_time(live: dict[str, Any], hasher: GatedHasher) -> None:
    base, checks = live["base"], checks_of(live)
    logins = 10
    results: dict[int, requests.Response] = {}
    calls: list[Callable[[], requests.Response]] = []
    for n in range(logins):
        email, password = next(live["accounts"])
        if n % 2:  # half through the API, half through the form: the one queue holds both
            calls.append(
                lambda e=email, p=password: requests.post(
                    f"{base}/api/v1/auth/login", json={"email": e, "password": p}, timeout=BOUND_S
                )
            )
        else:
            browser, csrf = form_session(base)
            form = {"email": email, "password": password, "csrf_token": csrf, "next": "/me"}
            calls.append(
                lambda b=browser, f=form: b.post(f"{base}/login", data=f, allow_redirects=False, timeout=BOUND_S)
            )

    hasher.gate.clear()
    threads = [threading.Thread(target=lambda n=n: results.__setitem__(n, calls[n]())) for n in range(logins)]
    for thread in threads:
        thread.start()
    try:
        # LIMIT checks held at the gate and every other login waiting its turn: none of those has begun a check.
        assert wait_until(lambda: hasher.running == LIMIT and checks.waiting == logins - LIMIT), (
            hasher.running,
            checks.waiting,
        )
        assert hasher.calls == LIMIT
    finally:
        hasher.gate.set()
    for thread in threads:
        thread.join(BOUND_S)
    assert len(results) == logins
    for n, resp in results.items():
        if n % 2:
            assert resp.status_code == 200, resp.text
        else:
            assert resp.status_code == 303 and resp.headers["location"] == "/me", resp.text
    assert hasher.calls == logins and hasher.most == LIMIT and checks.waiting == 0


def raw_request(port: int, head: str, body: bytes) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)
    sock.sendall(head.encode() + f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    return sock


def test_a_login_whose_client_left_while_it_waited_spends_no_check(live: dict[str, Any], hasher: GatedHasher) -> None:
    base, port, checks = live["base"], live["port"], checks_of(live)
    dropped_before = checks.dropped
    holders: list[requests.Response] = []
    hasher.gate.clear()
    threads = []
    for _ in range(LIMIT):  # every turn taken, held at the gate
        email, password = next(live["accounts"])
        body = {"email": email, "password": password}
        threads.append(
            threading.Thread(
                target=lambda b=body: holders.append(
                    requests.post(f"{base}/api/v1/auth/login", json=b, timeout=BOUND_S)
                )
            )
        )
    for thread in threads:
        thread.start()
    gone: list[socket.socket] = []
    try:
        assert wait_until(lambda: hasher.running == LIMIT), hasher.running
        # Two more logins, one by the API and one by the form, whose clients hang up while they wait.
        email, password = next(live["accounts"])
        api_body = json.dumps({"email": email, "password": password}).encode()
        gone.append(
            raw_request(
                port, "POST /api/v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n", api_body
            )
        )
        browser, csrf = form_session(base)
        email, password = next(live["accounts"])
        form_body = urlencode({"email": email, "password": password, "csrf_token": csrf}).encode()
        cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())
        gone.append(
            raw_request(
                port,
                "POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                f"Cookie: {cookie}\r\n",
                form_body,
            )
        )
        assert wait_until(lambda: checks.waiting == 2), checks.waiting
        ports = {sock.getsockname()[1] for sock in gone}
        for sock in gone:
            sock.close()
        # The server has seen both hang up (their connections are gone from its list) before any turn comes free.
        server = live["server"]
        assert wait_until(lambda: not any(c.client[1] in ports for c in list(server.server_state.connections)))
    finally:
        hasher.gate.set()
    for thread in threads:
        thread.join(BOUND_S)
    assert [r.status_code for r in holders] == [200] * LIMIT
    assert wait_until(lambda: checks.dropped == dropped_before + 2 and checks.waiting == 0), checks.dropped
    assert hasher.calls == LIMIT  # the holders' checks only: the two gone clients cost none

    # A client that stays is still checked after a drop (the turns were handed back).
    email, password = next(live["accounts"])
    resp = requests.post(f"{base}/api/v1/auth/login", json={"email": email, "password": password}, timeout=BOUND_S)
    assert resp.status_code == 200 and hasher.calls == LIMIT + 1


class Held:
    """A login step held at a gate for the accounts named, counted; the real step runs once the gate opens."""

    def __init__(self, real: Callable[..., Any], emails: set[str], email_of: Callable[..., str]) -> None:
        self.real, self.emails, self.email_of = real, emails, email_of
        self.gate = threading.Event()
        self.lock = threading.Lock()
        self.held = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.email_of(*args, **kwargs) in self.emails:
            with self.lock:
                self.held += 1
            if not self.gate.wait(BOUND_S):
                raise AssertionError("the test never opened the gate")
        return self.real(*args, **kwargs)


def api_login(base: str, email: str, password: str) -> requests.Response:
    return requests.post(f"{base}/api/v1/auth/login", json={"email": email, "password": password}, timeout=BOUND_S)


def test_a_login_in_its_database_steps_holds_no_turn(
    live: dict[str, Any], hasher: GatedHasher, monkeypatch: pytest.MonkeyPatch
) -> None:
    # LIMIT logins held in the account's read, LIMIT more in the session's write: had either step been inside the
    # turn, every turn would be taken and the next login would wait for the gates (a timeout here).
    base, checks = live["base"], checks_of(live)
    reading = [next(live["accounts"]) for _ in range(LIMIT)]
    writing = [next(live["accounts"]) for _ in range(LIMIT)]
    read = Held(users.find_for_login, {e for e, _ in reading}, lambda _session, *, email: email)
    write = Held(users.finish_login, {e for e, _ in writing}, lambda _s, _c, user, *_a, **_k: user.email)
    monkeypatch.setattr(users, "find_for_login", read)
    monkeypatch.setattr(users, "finish_login", write)
    held: list[requests.Response] = []
    threads = [
        threading.Thread(target=lambda e=email, p=password: held.append(api_login(base, e, p)))
        for email, password in reading + writing
    ]
    for thread in threads:
        thread.start()
    try:
        assert wait_until(lambda: read.held == LIMIT and write.held == LIMIT), (read.held, write.held)
        assert hasher.calls == LIMIT and hasher.running == 0 and checks.waiting == 0  # the writers' checks are done
        email, password = next(live["accounts"])
        assert api_login(base, email, password).status_code == 200
        assert hasher.calls == LIMIT + 1
    finally:
        read.gate.set()
        write.gate.set()
    for thread in threads:
        thread.join(BOUND_S)
    assert [r.status_code for r in held] == [200] * (2 * LIMIT) and hasher.calls == 2 * LIMIT + 1


def test_a_login_does_not_wait_for_the_request_threadpool(live: dict[str, Any], hasher: GatedHasher) -> None:
    # Every thread of the pool the other routes share is taken (a burst of submissions, say): both logins still
    # go through, in the logins' own lane.
    base = live["base"]
    browser, csrf = form_session(base)  # the form's page itself is an ordinary route: fetched before
    loop = live["server"].servers[0].get_loop()
    holders: list[object] = []

    async def take_every_thread() -> CapacityLimiter:
        limiter = anyio.to_thread.current_default_thread_limiter()
        for _ in range(int(limiter.total_tokens)):
            holders.append(object())
            await limiter.acquire_on_behalf_of(holders[-1])
        return limiter

    limiter = asyncio.run_coroutine_threadsafe(take_every_thread(), loop).result(BOUND_S)
    try:
        assert limiter.available_tokens == 0
        email, password = next(live["accounts"])
        assert api_login(base, email, password).status_code == 200
        email, password = next(live["accounts"])
        form = {"email": email, "password": password, "csrf_token": csrf, "next": "/me"}
        resp = browser.post(f"{base}/login", data=form, allow_redirects=False, timeout=BOUND_S)
        assert resp.status_code == 303 and resp.headers["location"] == "/me", resp.text
        assert limiter.available_tokens == 0 and hasher.calls == 2
    finally:

        def give_back() -> None:
            for holder in holders:
                limiter.release_on_behalf_of(holder)

        loop.call_soon_threadsafe(give_back)
    # The pool is the other routes' again: a route that needs it answers, for the browser just logged in.
    assert wait_until(lambda: limiter.available_tokens == limiter.total_tokens)
    assert browser.get(f"{base}/api/v1/auth/me", timeout=BOUND_S).json()["email"] == email


def test_a_checked_login_is_not_queued_behind_the_reads_of_later_ones(
    live: dict[str, Any], hasher: GatedHasher, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One login held in its hash; then as many later logins as the lane before the turn has threads, held in their
    # account's read. Its hash done, the first one's session is written all the same: the write has threads of its
    # own (with one lane for both steps it would wait for the reads' gate, a timeout here).
    base = live["base"]
    first = next(live["accounts"])
    later = [next(live["accounts"]) for _ in range(LOGIN_THREADS)]
    read = Held(users.find_for_login, {e for e, _ in later}, lambda _session, *, email: email)
    monkeypatch.setattr(users, "find_for_login", read)
    answers: list[requests.Response] = []
    hasher.gate.clear()
    try:
        threads = [threading.Thread(target=lambda: answers.append(api_login(base, *first)))]
        threads[0].start()
        assert wait_until(lambda: hasher.running == 1), hasher.running
        threads += [
            threading.Thread(target=lambda e=email, p=password: answers.append(api_login(base, e, p)))
            for email, password in later
        ]
        for thread in threads[1:]:
            thread.start()
        assert wait_until(lambda: read.held == LOGIN_THREADS), read.held
        hasher.gate.set()
        threads[0].join(BOUND_S)
        assert [r.status_code for r in answers] == [200] and read.held == LOGIN_THREADS
    finally:
        hasher.gate.set()
        read.gate.set()
    for thread in threads:
        thread.join(BOUND_S)
    assert [r.status_code for r in answers] == [200] * (1 + LOGIN_THREADS)
