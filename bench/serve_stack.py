"""The stack the HTTP benches grade on: `autograder serve` on a free port of 127.0.0.1 and, scaled out, two
`autograder worker` processes of one slot on the Celery broker, so both modes grade on 2 slots. Not a bench itself
(bench.run_all runs the modules named ``bench_*``)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from app.config import REPO_ROOT
from bench.bench_fill_in import free_port

REDIS_URL = os.environ.get("AUTOGRADER_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
START_S = 180  # a loaded machine takes a while to import torch


@contextlib.contextmanager
def stack(mode: str, url: str, tmp: Path, env: dict[str, str] | None = None) -> Iterator[int]:
    """`serve` (embedded: 2 grading workers) plus, for celery, two workers (the broker's db flushed first); its port.

    ``env`` is added to every process's environment; the log of all of them is ``tmp/<mode>.log``."""
    port = free_port()
    base = {
        **os.environ,
        "AUTOGRADER_DATABASE_URL": url,
        "AUTOGRADER_SECRET_KEY": "b" * 40,
        "AUTOGRADER_LOAD_PROBLEMS_ON_START": "false",
        "AUTOGRADER_PREWARM_SANDBOX": "true",
        **(env or {}),
    }
    if mode == "celery":
        import redis

        redis.Redis.from_url(REDIS_URL).flushdb()
        base["AUTOGRADER_BROKER_URL"] = REDIS_URL
    log = (tmp / f"{mode}.log").open("wb")
    commands = [(["serve", "--port", str(port)], {"AUTOGRADER_DATA_DIR": str(tmp / "api"), "AUTOGRADER_WORKERS": "2"})]
    if mode == "celery":
        commands += [(["worker", "--concurrency", "1"], {"AUTOGRADER_DATA_DIR": str(tmp / f"w{i}")}) for i in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", *args],
            cwd=REPO_ROOT,
            env={**base, **own},
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
        for args, own in commands
    ]
    try:
        _wait_healthy(port, procs, f"the {mode} stack did not start (log: {tmp / f'{mode}.log'})")
        yield port
    finally:
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 15)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait(10)
        log.close()


def _wait_healthy(port: int, procs: list[subprocess.Popen[bytes]], failure: str) -> None:
    deadline = time.monotonic() + START_S
    while True:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise RuntimeError(failure)
        time.sleep(0.2)
