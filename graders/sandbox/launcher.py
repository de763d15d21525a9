"""Start zygote processes from one long-lived thread.

bubblewrap's --die-with-parent uses PR_SET_PDEATHSIG, which fires when the *thread* that forked it exits, not the
process: a zygote started from a short-lived worker thread would die with that thread. Every Popen therefore happens
on this daemon thread, which lives as long as the trusted process.
"""

from __future__ import annotations

import queue
import subprocess
import threading
from concurrent.futures import Future
from typing import Any

_requests: queue.Queue[tuple[list[str], dict[str, Any], Future[subprocess.Popen[bytes]]]] = queue.Queue()
_lock = threading.Lock()
_thread: threading.Thread | None = None


def _serve() -> None:
    while True:
        argv, kwargs, future = _requests.get()
        try:
            future.set_result(subprocess.Popen(argv, **kwargs))
        except BaseException as exc:
            future.set_exception(exc)


def popen(argv: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """subprocess.Popen, run on the launcher thread."""
    global _thread
    with _lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_serve, name="autograder-zygote-launcher", daemon=True)
            _thread.start()
    future: Future[subprocess.Popen[bytes]] = Future()
    _requests.put((argv, kwargs, future))
    return future.result()
