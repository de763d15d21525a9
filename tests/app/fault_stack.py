"""The real processes a fault test starts, stops and kills: a private redis-server on a free port, `autograder
serve` and `autograder worker`, each in a session of its own with its log in a file; and the database the worker
fault tests grade on. Nothing here is a mock."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.courses import accounts, course_sets
from app.courses.access import access_for
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.submissions import service as submissions
from app.submissions.models import CheckResultRow, Status, Submission
from app.users.models import Role, User
from tests.conftest import FIXTURE_SETS, REPO, service_missing

FINAL = {Status.GRADED, Status.ERROR}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until(what: str, ready: Callable[[], bool], bound_s: float = 120, every_s: float = 0.1) -> float:
    """Poll until ``ready()``; returns the seconds it took. The bound only stops a hung test; it measures nothing."""
    start = time.monotonic()
    while time.monotonic() - start < bound_s:
        try:
            if ready():
                return time.monotonic() - start
        except Exception:  # a server still starting, a broker still down
            pass
        time.sleep(every_s)
    pytest.fail(f"{what}: not within {bound_s} s")


class PrivateRedis:
    """A redis-server of this test only, so it can be stopped without disturbing anyone else's."""

    def __init__(self, tmp: Path, port: int | None = None) -> None:
        if shutil.which("redis-server") is None:
            service_missing("redis-server (to start a private one)", FileNotFoundError("not on PATH"))
        self.port, self.tmp = port or free_port(), tmp
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        import redis

        cmd = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        log = (self.tmp / "redis.log").open("ab")
        self.proc = subprocess.Popen([*cmd, "--dir", str(self.tmp)], stdout=log, stderr=log, start_new_session=True)
        wait_until("redis-server answers", lambda: bool(redis.Redis.from_url(self.url).ping()), bound_s=30)

    def stop(self) -> None:
        """Gone at once, like a crashed broker; started again empty (no persistence): its queue is lost too."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        self.proc = None


class Process:
    """`python -m app.cli.main ARGS` in a session of its own, stdout and stderr in ``log``; ``prefix`` runs it
    through a command that ends by exec'ing it (so its pid is the process's own, e.g. `other_host`'s)."""

    def __init__(self, args: list[str], env: dict[str, str], log: Path, prefix: tuple[str, ...] = ()) -> None:
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [*prefix, sys.executable, "-m", "app.cli.main", *args],
                cwd=REPO,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def kill(self) -> None:
        """SIGKILL the process only (not its group): whatever it started must not outlive it by itself."""
        self.proc.kill()
        self.proc.wait(30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        # Anything left in its session (a sandbox child) goes too, so a failed test leaves no stray process.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def text(self) -> str:
        return self.log.read_text(errors="replace")


def other_host(name: str) -> tuple[str, ...]:
    """A command prefix that runs a process under another host name (a UTS namespace of its own), as a worker on a
    second machine would be: what it claims says ``name:pid:slot``. Skips where namespaces cannot be made."""
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is missing")
    candidates = [("unshare", "--uts"), ("unshare", "--user", "--map-root-user", "--uts")]
    for base in candidates:
        probe = subprocess.run([*base, "hostname", name], capture_output=True, check=False)
        if probe.returncode == 0:
            return (*base, "sh", "-c", f'hostname {name} && exec "$@"', "sh")
    pytest.skip("cannot create a UTS namespace here (unshare refused)")


@dataclass
class CodesetDatabase:
    """The database of a worker fault test: migrated, the codeset fixture loaded, one student; the settings are
    the test's own (for its calls into the services), the workers get theirs from ``worker_env``."""

    url: str
    engine: Engine
    sessions: sessionmaker[Session]
    settings: Settings
    student: User

    @classmethod
    def create(cls, url: str, tmp_path: Path) -> CodesetDatabase:
        upgrade(url)
        engine = make_engine(url)
        sessions = make_session_factory(engine)
        settings = Settings(data_dir=tmp_path / "data", database_url=url, secret_key="k" * 40)
        with sessions() as session:
            course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
            student, _ = accounts.create_user(session, email="s@example.com", role=Role.STUDENT)
            session.commit()
        return cls(url, engine, sessions, settings, student)

    def worker_env(self, lease_s: int, **extra: str) -> dict[str, str]:
        """The environment of an `autograder worker` on this database: one slot, a grading lease of ``lease_s``."""
        return {
            "AUTOGRADER_DATABASE_URL": self.url,
            "AUTOGRADER_SECRET_KEY": "k" * 40,
            "AUTOGRADER_WORKERS": "1",
            "AUTOGRADER_GRADING_LEASE_S": str(lease_s),
            **extra,
        }

    def submit_c1(self, code: str) -> int:
        """The student's submission of ``code`` to codeset c1, queued as the API queues it; its id."""
        with self.sessions() as session:
            sub, _ = submissions.create(session, settings=self.settings, user=self.student,
                                        access=access_for(session, self.student), problem_set="codeset",
                                        problem_id="c1", code=code)  # fmt: skip
            return sub.id


def statuses(sessions: sessionmaker[Session], ids: list[int]) -> dict[int, str]:
    with sessions() as session:
        rows = session.execute(select(Submission.id, Submission.status).where(Submission.id.in_(ids))).all()
        return {sub_id: status for sub_id, status in rows}


def all_final(sessions: sessionmaker[Session], ids: list[int]) -> Callable[[], bool]:
    def ready() -> bool:
        now = statuses(sessions, ids)
        return len(now) == len(ids) and all(s in FINAL for s in now.values())

    return ready


def assert_graded_once(sessions: sessionmaker[Session], ids: list[int], checks_each: int) -> None:
    """Each graded, with one set of check rows (a result is written once per claim: a second grading of the same
    claim, or two claims both writing, would leave more rows or a takeover count)."""
    with sessions() as session:
        for sub_id in ids:
            sub = session.get(Submission, sub_id)
            assert sub is not None and sub.status == Status.GRADED, (sub_id, sub and sub.status, sub and sub.error)
            assert sub.grade is not None
            rows = session.scalar(
                select(func.count()).select_from(CheckResultRow).where(CheckResultRow.submission_id == sub_id)
            )
            assert rows == checks_each, (sub_id, rows)


def healthz(base: str) -> dict:  # type: ignore[type-arg]
    resp = httpx.get(f"{base}/healthz", timeout=5)
    assert resp.status_code == 200, resp.text
    return resp.json()  # type: ignore[no-any-return]


def _stat(pid: int) -> tuple[int, int] | None:
    """(parent pid, start time in clock ticks) of a live process, None once it is gone (or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[1]), int(fields[19])


def descendants(root: int) -> dict[int, int]:
    """Every live descendant of ``root`` (children of children too), by pid, with its start time."""
    parents: dict[int, list[int]] = {}
    starts: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            parents.setdefault(stat[0], []).append(int(entry.name))
            starts[int(entry.name)] = stat[1]
    found: dict[int, int] = {}
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child in starts and child not in found:
                found[child] = starts[child]
                todo.append(child)
    return found


def survivors(former: dict[int, int]) -> list[int]:
    """The processes of ``former`` still alive (the same start time: not a new process that reused the pid)."""
    return [pid for pid, start in former.items() if (stat := _stat(pid)) is not None and stat[1] == start]


def depth_below(root: int, pid: int) -> int:
    """How many parent links lead from ``pid`` up to ``root`` (0 when ``root`` is not an ancestor)."""
    depth, current = 0, pid
    while current not in (0, 1, root):
        stat = _stat(current)
        if stat is None:
            return 0
        current, depth = stat[0], depth + 1
    return depth if current == root else 0


class TcpProxy:
    """A TCP relay on 127.0.0.1 in front of a real server (the shared PostgreSQL), which the test can cut: every
    open connection is reset and new ones are refused, as when the server is stopped or its host is gone, without
    touching the server others use. ``restore`` listens again on the same port."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = free_port()
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), name="proxy-accept", daemon=True).start()

    def cut(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)  # wakes the accept() blocked on it
            listener.close()
        with self._lock:
            doomed, self._sockets = self._sockets, set()
        for sock in doomed:
            # SO_LINGER 0: a reset, not a polite FIN, like a server that vanished.
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    restore = start

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._listener is not listener:  # cut meanwhile
                    client.close()
                    upstream.close()
                    continue
                self._sockets.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(src, dst), name="proxy-pipe", daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            with self._lock:
                self._sockets.discard(src)
                self._sockets.discard(dst)
