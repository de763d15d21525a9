"""app.server_limits: the open-file limit raised at start, and the connection guard in front of uvicorn's protocols.

The guard tests run a real uvicorn server in a thread with a tiny ASGI app, once over each of uvicorn's HTTP/1.1
protocols (h11 and httptools). Every wait is bounded by a socket timeout or a counted loop; none measures time.
"""

from __future__ import annotations

import asyncio
import http.client
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from app import server_limits
from app.config import Settings
from app.server_limits import ConnectionLimits, connection_limits, raise_open_file_limit
from tests.conftest import REPO

BOUND_S = 10.0  # how long any single wait may last before the test gives up; never asserted on


@contextmanager
def nofile(soft: int) -> Iterator[int]:
    """Run with the soft open-file limit at ``soft``; yield the hard limit; restore afterwards."""
    old_soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        yield hard
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (old_soft, hard))


def test_the_soft_limit_is_raised_to_the_hard_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.skip(f"the hard open-file limit ({hard}) leaves nothing to raise")
    with nofile(1024) as hard:
        expected = server_limits.OPEN_FILES_CAP if hard == resource.RLIM_INFINITY else min(hard, 65536)
        assert raise_open_file_limit() == expected
        assert resource.getrlimit(resource.RLIMIT_NOFILE) == (expected, hard)


def test_the_raise_is_capped_and_never_lowers_the_limit() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 4096:
        pytest.skip(f"the hard open-file limit ({hard}) is below 4096")
    with nofile(1024):
        assert raise_open_file_limit(cap=2048) == 2048
    with nofile(4096):
        assert raise_open_file_limit(cap=2048) == 4096


def test_connection_limits_leave_fds_for_the_sandbox_and_the_database(tmp_path: Path) -> None:
    default = Settings(data_dir=tmp_path)
    assert connection_limits(default, 65536).max_connections == 65536 - server_limits.FD_RESERVE
    assert connection_limits(default, 1024).max_connections == 512
    assert connection_limits(default, 100).max_connections == server_limits.MIN_CONNECTIONS
    configured = Settings(data_dir=tmp_path, http_max_connections=300)
    assert connection_limits(configured, 65536).max_connections == 300
    assert connection_limits(configured, 600).max_connections == 600 - server_limits.FD_RESERVE  # capped
    limits = connection_limits(default, 4096)
    assert (limits.header_timeout_s, limits.body_timeout_s, limits.keep_alive_s, limits.backlog) == (10, 120, 5, 2048)
    options = server_limits.uvicorn_options(limits)
    assert options["limit_concurrency"] == limits.max_connections + 1
    assert (options["timeout_keep_alive"], options["backlog"]) == (5, 2048)


# --- the guard, under a real uvicorn ---------------------------------------------------------------------------

PROTOCOLS = [pytest.param(H11Protocol, id="h11"), pytest.param(HttpToolsProtocol, id="httptools")]


class TinyApp:
    """Answers 200 after reading the whole body; GET /slow holds its request until ``release`` is set."""

    def __init__(self) -> None:
        self.slow_started = threading.Event()
        self.release = threading.Event()

    async def __call__(self, scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
        if scope["type"] != "http":
            return
        more = True
        while more:
            message = await receive()
            more = message.get("more_body", False) and message["type"] == "http.request"
        if scope["path"] == "/slow":
            self.slow_started.set()
            for _ in range(int(BOUND_S / 0.01)):
                if self.release.is_set():
                    break
                await asyncio.sleep(0.01)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


@contextmanager
def serving(base: type[asyncio.Protocol], **overrides: Any) -> Iterator[tuple[int, uvicorn.Server, TinyApp]]:
    values: dict[str, Any] = {
        "max_connections": 100,
        "header_timeout_s": 60.0,
        "body_timeout_s": 60.0,
        "keep_alive_s": 60,
        "backlog": 128,
    }
    limits = ConnectionLimits(**{**values, **overrides})
    app = TinyApp()
    options = server_limits.uvicorn_options(limits)
    options["http"] = server_limits.guarded_protocol(limits, base=base)
    config = uvicorn.Config(app, log_level="warning", lifespan="off", loop="asyncio", **options)
    server = uvicorn.Server(config)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        for _ in range(int(BOUND_S / 0.01)):
            if server.started:
                break
            time.sleep(0.01)
        assert server.started, "the test server did not start"
        yield port, server, app
    finally:
        app.release.set()
        server.should_exit = True
        thread.join(BOUND_S)
        listener.close()


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=BOUND_S)


def closed_by_server(sock: socket.socket) -> bool:
    """Block (up to the socket timeout) until the server closes the connection; False if it answered instead."""
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def is_open(sock: socket.socket) -> bool:
    """Whether the server still holds the connection, without waiting."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except ConnectionResetError:
        return False
    finally:
        sock.settimeout(timeout)


def wait_until(condition: Callable[[], bool], bound_s: float = BOUND_S) -> bool:
    for _ in range(int(bound_s / 0.01)):
        if condition():
            return True
        time.sleep(0.01)
    return False


def get(port: int, path: str = "/") -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
    try:
        conn.request("GET", path)
        return conn.getresponse().status
    finally:
        conn.close()


@pytest.mark.parametrize("base", PROTOCOLS)
def test_a_connection_that_sends_nothing_is_closed(base: type[asyncio.Protocol]) -> None:
    with serving(base, header_timeout_s=0.2) as (port, _, _):
        with connect(port) as idle:
            assert closed_by_server(idle)
        assert get(port) == 200


@pytest.mark.parametrize("base", PROTOCOLS)
def test_a_request_head_sent_byte_by_byte_is_cut_off(base: type[asyncio.Protocol]) -> None:
    with serving(base, header_timeout_s=0.3) as (port, _, _), connect(port) as slow:
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")
        cut = False
        for _ in range(200):  # 200 header bytes, well past the deadline; each byte alone would reset uvicorn's timer
            try:
                slow.sendall(b"X")
            except (BrokenPipeError, ConnectionResetError):
                cut = True
                break
            if not is_open(slow):
                cut = True
                break
            time.sleep(0.05)
        assert cut, "the server kept a request head that never ended"


@pytest.mark.parametrize("base", PROTOCOLS)
def test_a_body_that_never_ends_is_cut_off(base: type[asyncio.Protocol]) -> None:
    with serving(base, body_timeout_s=0.3) as (port, _, _), connect(port) as slow:
        slow.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc")
        assert closed_by_server(slow)


@pytest.mark.parametrize("base", PROTOCOLS)
def test_keep_alive_requests_are_answered(base: type[asyncio.Protocol]) -> None:
    with serving(base, header_timeout_s=5.0) as (port, _, _):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
        try:
            for _ in range(3):
                conn.request("POST", "/", body=b"x" * 5000)
                response = conn.getresponse()
                assert (response.status, response.read()) == (200, b"ok")
        finally:
            conn.close()


@pytest.mark.parametrize("base", PROTOCOLS)
def test_past_the_cap_the_oldest_idle_connection_makes_room(base: type[asyncio.Protocol]) -> None:
    with serving(base, max_connections=3) as (port, server, app):
        busy = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
        busy.request("GET", "/slow")  # the app holds it: a connection with a request is never evicted
        assert app.slow_started.wait(BOUND_S)
        idle = [connect(port), connect(port)]
        assert wait_until(lambda: len(server.server_state.connections) == 3)
        try:
            assert get(port) == 200  # a fourth connection: the oldest idle one makes room
            assert closed_by_server(idle[0])
            assert is_open(idle[1])
            app.release.set()
            response = busy.getresponse()
            assert (response.status, response.read()) == (200, b"ok")
        finally:
            busy.close()
            for sock in idle:
                sock.close()


@pytest.mark.parametrize("base", PROTOCOLS)
def test_when_every_connection_is_busy_a_new_one_is_closed(base: type[asyncio.Protocol]) -> None:
    with serving(base, max_connections=1) as (port, _, app):
        busy = http.client.HTTPConnection("127.0.0.1", port, timeout=BOUND_S)
        busy.request("GET", "/slow")
        assert app.slow_started.wait(BOUND_S)
        try:
            with connect(port) as extra:
                assert closed_by_server(extra)
            app.release.set()
            assert busy.getresponse().status == 200
        finally:
            busy.close()


def test_the_polling_worker_raises_its_open_file_limit(tmp_path: Path) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 1024:
        pytest.skip(f"the hard open-file limit ({hard}) leaves nothing to raise")
    expected = server_limits.OPEN_FILES_CAP if hard == resource.RLIM_INFINITY else min(hard, 65536)
    env = {key: value for key, value in os.environ.items() if not key.startswith("AUTOGRADER_")}
    env |= {"AUTOGRADER_DATA_DIR": str(tmp_path / "data"), "AUTOGRADER_PREWARM_SANDBOX": "false"}
    launch = (
        "import os, resource, sys\n"
        "resource.setrlimit(resource.RLIMIT_NOFILE, (1024, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'app.cli.main', 'worker', '--concurrency', '1'])\n"
    )
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen([sys.executable, "-c", launch], cwd=REPO, env=env, stdout=out, stderr=out)
    try:
        started = wait_until(lambda: "polling" in log.read_text() or worker.poll() is not None, bound_s=120)
        assert started, log.read_text()
        assert worker.poll() is None, log.read_text()
        limits = Path(f"/proc/{worker.pid}/limits").read_text()
        line = next(row for row in limits.splitlines() if row.startswith("Max open files"))
        assert line.split()[3] == str(expected), line
        assert f"open-file limit (RLIMIT_NOFILE): {expected} (was 1024" in log.read_text()
    finally:
        worker.terminate()
        worker.wait(30)
