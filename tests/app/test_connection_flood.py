"""A flood of idle connections does not stall grading (issue "Trustworthy code grading, round 2", class 8: about
1100 half-open connections, no login needed, pushed the server past fd 1023 and every code submission ended
`error`).

The real `autograder serve` runs in a subprocess that starts, as a service usually does, with a soft open-file limit
of 1024. This process opens 1500 TCP connections to it that never send a byte and, while they are held, a separate
client submits a code problem and a fill-in answer with `?wait=60`; both must be graded with full marks. Two cases:

- the hard limit allows more: `serve` raises the soft limit, so the server holds all 1500 connections (its fd
  numbers go far past 1023) and still has fds for the sandbox, which it starts during the flood;
- the hard limit is 1024 too (nothing to raise): the server holds at most 1024 - 512 = 512 connections, each new
  one evicting the oldest that has not sent a request, and the fds left over are enough to grade.

The header timeout is set to an hour here, so what frees the server is the fd limit and the connection cap, not
the timeout (tests/app/test_server_limits.py covers the timeouts). All traffic stays on 127.0.0.1; every wait is
bounded by a count or a socket timeout and none is asserted on.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.config import Settings
from app.courses import course_sets
from app.server_limits import FD_RESERVE
from tests.app.conftest import Account
from tests.conftest import FIXTURE_SETS, REPO

FLOOD = 1500
SOFT_LIMIT = 1024
CORRECT = "def add(a, b):\n    return a + b\n"

# Set the server's open-file limits, then exec `python -m app.cli.main ARGS...` ("keep" keeps the hard limit).
LAUNCH = (
    "import os, resource, sys\n"
    "soft, hard = int(sys.argv[1]), sys.argv[2]\n"
    "hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1] if hard == 'keep' else int(hard)\n"
    "resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'app.cli.main', *sys.argv[3:]])\n"
)

pytestmark = pytest.mark.slow


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    """SQLite only (this replaces the fixture parametrised over both backends): connections are refused or held
    before any request reaches the database, so PostgreSQL would test nothing more, at twice the cost."""
    path = tmp_path / "autograder.db"
    path.write_bytes(sqlite_template.read_bytes())
    return f"sqlite:///{path}"


@pytest.fixture
def code_and_basic_sets(sessions) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        session.commit()


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def sockets(self) -> int:
        """How many sockets the server process holds now (its listener and internal ones included)."""
        count = 0
        for fd in os.listdir(f"/proc/{self.process.pid}/fd"):
            with suppress(OSError):  # closed meanwhile
                count += os.readlink(f"/proc/{self.process.pid}/fd/{fd}").startswith("socket:")
        return count


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def autograder_serve(settings: Settings, log: Path, *, hard_limit: str) -> Iterator[Server]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("AUTOGRADER_")}
    assert settings.secret_key is not None
    env |= {
        "AUTOGRADER_DATA_DIR": str(settings.data_dir),
        "AUTOGRADER_DATABASE_URL": settings.resolved_database_url,
        "AUTOGRADER_SECRET_KEY": settings.secret_key.get_secret_value(),
        "AUTOGRADER_WORKERS": str(settings.workers),
        "AUTOGRADER_SANDBOX": settings.sandbox,
        "AUTOGRADER_PROBLEMS_DIR": str(settings.problems_dir),
        "AUTOGRADER_LOAD_PROBLEMS_ON_START": "false",
        "AUTOGRADER_PREWARM_SANDBOX": "false",  # the sandbox starts during the flood, on the first code submission
        "AUTOGRADER_HTTP_HEADER_TIMEOUT_S": "3600",
    }
    port = free_port()
    command = [sys.executable, "-c", LAUNCH, str(SOFT_LIMIT), hard_limit, "serve", "--host", "127.0.0.1"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*command, "--port", str(port)], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,  # so the sandbox it starts goes with it at the end
        )  # fmt: skip
    server = Server(process, port, log)
    try:
        for _ in range(600):  # the bound on a server that never comes up
            if process.poll() is not None:
                pytest.fail(f"autograder serve exited with {process.returncode}:\n{server.tail()}")
            try:
                if httpx.get(f"{server.url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            time.sleep(0.2)
        else:
            pytest.fail(f"autograder serve never answered /healthz:\n{server.tail()}")
        yield server
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(30)


@contextmanager
def idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` TCP connections that send nothing; this process's own soft fd limit is raised to hold them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = count + 512
    if hard != resource.RLIM_INFINITY and hard < needed:
        pytest.skip(f"the hard open-file limit ({hard}) is below the {needed} fds this test's client needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, needed), hard))
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            held.append(socket.create_connection(("127.0.0.1", port), timeout=10))
        yield held
    finally:
        for sock in held:
            sock.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def still_open(sock: socket.socket) -> bool:
    """Whether the server still holds this connection (it sent no FIN or RST), without waiting."""
    sock.setblocking(False)
    try:
        return sock.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True
    except OSError:
        return False


def submit(client: httpx.Client, server: Server, body: dict[str, Any]) -> dict[str, Any]:
    try:
        response = client.post("/api/v1/submissions", params={"wait": 60}, json=body)
    except httpx.TransportError as exc:
        holds = f"the server holds {server.sockets()} sockets"
        pytest.fail(f"the submission got no answer during the flood: {exc!r} ({holds})\nserver log:\n{server.tail()}")
    assert response.status_code == 202, f"{response.status_code} {response.text}\nserver log:\n{server.tail()}"
    result: dict[str, Any] = response.json()
    return result


@pytest.mark.parametrize(
    ("hard_limit", "held"),
    [
        pytest.param("keep", FLOOD, id="fd-limit-can-be-raised"),
        pytest.param(str(SOFT_LIMIT), SOFT_LIMIT - FD_RESERVE, id="fd-limit-fixed-at-1024"),
    ],
)
def test_a_flood_of_idle_connections_does_not_stall_grading(
    settings: Settings,
    accounts: dict[str, Account],
    code_and_basic_sets: None,
    tmp_path: Path,
    hard_limit: str,
    held: int,
) -> None:
    _, own_hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard_limit == "keep" and own_hard != resource.RLIM_INFINITY and own_hard < FLOOD + FD_RESERVE + 100:
        pytest.skip(f"the hard open-file limit ({own_hard}) is too low to hold {FLOOD} connections")
    with (
        autograder_serve(settings, tmp_path / "serve.log", hard_limit=hard_limit) as server,
        idle_connections(server.port, FLOOD) as flood,
    ):
        for _ in range(500):  # let the server accept what it will hold; bounded, and not asserted on
            if server.sockets() >= held:
                break
            time.sleep(0.02)
        headers = accounts["alice"].headers
        with httpx.Client(base_url=server.url, headers=headers, timeout=httpx.Timeout(120)) as client:
            code = submit(client, server, {"problem_set": "codeset", "problem": "c1", "code": CORRECT})
            answers = {"b1": "encoder", "b2": "2^5"}
            fill_in = submit(client, server, {"problem_set": "basic", "problem": "t1", "answers": answers})
        sockets_during_flood = server.sockets()
        open_flood = sum(still_open(sock) for sock in flood)

    assert (code["status"], code["verdict"]) == ("graded", "accepted"), code
    assert code["final_score"] == code["max_score"] == 3.0
    assert (fill_in["status"], fill_in["verdict"]) == ("graded", "accepted"), fill_in
    assert fill_in["final_score"] == fill_in["max_score"] == 3.0
    if hard_limit == "keep":
        # It graded while holding the whole flood, not because it dropped it.
        assert open_flood == FLOOD
        assert sockets_during_flood > FLOOD
    else:
        # The cap held: the server never went near its 1024 fds, and dropped what it could not hold.
        assert open_flood <= held
        assert sockets_during_flood <= held + 32
