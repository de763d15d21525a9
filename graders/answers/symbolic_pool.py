"""A small pool of worker processes that run SymPy ``simplify`` under a hard time limit.

``simplify`` can take minutes on adversarial input and a thread cannot be stopped, so the work runs in a separate
process that is killed when it overruns. Workers are started with the 'spawn' method (no inherited state or locks
from the grading process), import SymPy once, and then serve many requests, so only the first escalation pays the
start-up cost. Requests and replies are JSON over a pipe: nothing is pickled.

Only answers the cheap in-process numeric check cannot decide come here (see symbolic.py).
"""

from __future__ import annotations

import json
import multiprocessing
import threading
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any, Literal

SIMPLIFY_TIMEOUT_S = 3.0
START_TIMEOUT_S = 60.0
MAX_IDLE_WORKERS = 2
MAX_REQUESTS_PER_WORKER = 500  # recycle now and then: SymPy's caches only grow
WORKER_MEMORY_BYTES = 2 * 1024**3

Verdict = Literal["equal", "different", "error", "timeout"]


def _limit_memory() -> None:
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass  # not available on this platform; the time limit still holds


def _serve(conn: Connection) -> None:
    """Worker main loop: answer simplify requests until the pipe closes."""
    from graders.answers.symbolic_sympy import simplify_equal

    _limit_memory()
    conn.send_bytes(b'"ready"')
    while True:
        try:
            request = json.loads(conn.recv_bytes())
        except (EOFError, OSError):
            return
        try:
            equal = simplify_equal(request["student"], request["expected"], request["symbols"])
            reply = "equal" if equal else "different"
        except Exception:  # any SymPy failure (MemoryError included) is "could not decide"
            reply = "error"
        conn.send_bytes(json.dumps(reply).encode())


class _Worker:
    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, child_conn = ctx.Pipe()
        self.process = ctx.Process(target=_serve, args=(child_conn,), daemon=True, name="symbolic-simplify")
        self.process.start()
        child_conn.close()
        self.requests = 0

    def wait_ready(self) -> bool:
        return self.conn.poll(START_TIMEOUT_S) and self._recv() == "ready"

    def _recv(self) -> Any:
        try:
            return json.loads(self.conn.recv_bytes(maxlength=1024))
        except (EOFError, OSError, ValueError):
            return None

    def ask(self, request: dict[str, Any], timeout: float) -> Verdict | None:
        """Send one request; None when the worker overran the timeout or died."""
        self.requests += 1
        try:
            self.conn.send_bytes(json.dumps(request).encode())
        except OSError:
            return None
        if not self.conn.poll(timeout):
            return None
        reply = self._recv()
        return reply if reply in ("equal", "different", "error") else None

    def stop(self) -> None:
        self.process.kill()
        self.process.join(timeout=5)
        self.conn.close()


_idle: list[_Worker] = []
_lock = threading.Lock()


def _take() -> _Worker | None:
    with _lock:
        while _idle:
            worker = _idle.pop()
            if worker.process.is_alive():
                return worker
            worker.stop()
    worker = _Worker()
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
    request = {"student": student, "expected": expected, "symbols": list(symbols)}
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
