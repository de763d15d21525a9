"""A small pool of worker processes that run SymPy ``simplify`` under a hard time limit.

``simplify`` can take minutes on adversarial input and a thread cannot be stopped, so the work runs in a separate
process (symbolic_worker) that is killed when it overruns. Workers are plain subprocesses rather than
multiprocessing children, so this also works inside daemonic processes such as Celery's prefork workers, and they
inherit no state, locks or secrets from the grading process. Each worker imports SymPy once and then serves many
requests, so only the first escalation pays the start-up cost. Requests and replies are JSON lines: nothing is
pickled.

Only answers the cheap in-process numeric check cannot decide come here (see symbolic.py).
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Literal

SIMPLIFY_TIMEOUT_S = 3.0
START_TIMEOUT_S = 60.0
MAX_IDLE_WORKERS = 2
MAX_REQUESTS_PER_WORKER = 500  # recycle now and then: SymPy's caches only grow

Verdict = Literal["equal", "different", "error", "timeout"]


def _worker_env() -> dict[str, str]:
    # Only what is needed to import this package: no secrets from the service's environment.
    path = os.pathsep.join(p for p in sys.path if p)
    return {"PYTHONPATH": path, "PATH": os.environ.get("PATH", ""), "PYTHONDONTWRITEBYTECODE": "1"}


class _Worker:
    def __init__(self) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "graders.answers.symbolic_worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=_worker_env(),
        )
        self.requests = 0

    def _read(self, timeout: float) -> str | None:
        stdout = self.process.stdout
        assert stdout is not None
        # poll, not select: select() fails outright once this process holds fd numbers above 1023 (a busy server).
        poller = select.poll()
        poller.register(stdout, select.POLLIN)
        if not poller.poll(max(0.0, timeout) * 1000):
            return None
        try:
            reply = json.loads(stdout.readline(1024))
        except ValueError:  # EOF (the worker died) or a garbled line
            return None
        return reply if isinstance(reply, str) else None

    def wait_ready(self) -> bool:
        return self._read(START_TIMEOUT_S) == "ready"

    def ask(self, request: dict[str, object], timeout: float) -> Verdict | None:
        """Send one request; None when the worker overran the timeout or died."""
        self.requests += 1
        stdin = self.process.stdin
        assert stdin is not None
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
        except OSError:
            return None
        reply = self._read(timeout)
        verdicts: dict[str | None, Verdict] = {"equal": "equal", "different": "different", "error": "error"}
        return verdicts.get(reply)

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        self.process.kill()
        self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


_idle: list[_Worker] = []
_lock = threading.Lock()


def _take() -> _Worker | None:
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.alive():
                return worker
            worker.stop()
    try:
        worker = _Worker()
    except OSError:
        return None
    if worker.wait_ready():
        return worker
    worker.stop()
    return None


def _give_back(worker: _Worker) -> None:
    with _lock:
        if len(_idle) < MAX_IDLE_WORKERS and worker.requests < MAX_REQUESTS_PER_WORKER:
            _idle.append(worker)
            return
    worker.stop()


def check_equal(student: str, expected: str, symbols: Sequence[str], timeout: float | None = None) -> Verdict:
    """Decide ``simplify(student - expected) == 0`` in a worker process, killing it after ``timeout`` seconds.

    Args:
        student: the student's expression text (already accepted by safe_expr.parse_expression).
        expected: the expected expression text.
        symbols: allowed symbol names.
        timeout: seconds allowed for simplify; defaults to SIMPLIFY_TIMEOUT_S.

    Returns:
        "equal", "different", "error" (SymPy failed or no worker could start) or "timeout".
    """
    worker = _take()
    if worker is None:
        return "error"
    request: dict[str, object] = {"student": student, "expected": expected, "symbols": list(symbols)}
    verdict = worker.ask(request, SIMPLIFY_TIMEOUT_S if timeout is None else timeout)
    if verdict is None:
        worker.stop()
        return "timeout"
    _give_back(worker)
    return verdict


def shutdown() -> None:
    """Stop the idle workers (tests and graceful shutdown)."""
    with _lock:
        workers, _idle[:] = list(_idle), []
    for worker in workers:
        worker.stop()
