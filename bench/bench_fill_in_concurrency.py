"""P3: fill-in answers through HTTP with ?wait from 1, 5, 20 and 50 concurrent clients, on SQLite and PostgreSQL.

A real `autograder serve` process (embedded workers) on 127.0.0.1; the clients post ch9 answers with ?wait=10 and
check every grade. Per concurrency level it prints graded/s, p50/p95/p99 time to graded, and the server's CPU
milliseconds per answer (read from /proc for the server process). Baseline, measured in the same run: the same
answers graded in-process by graders.grade alone, per second.

    .venv/bin/python -m bench.bench_fill_in_concurrency [--levels 1,5,20,50] [--per-client 20]
        [--backends sqlite,postgres]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.config import REPO_ROOT
from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.users.models import Role
from bench.bench_fill_in import CASES, free_port, percentile, run_inprocess
from graders.problemset.loader import load_problem_set

POSTGRES_ADMIN_URL = os.environ.get(
    "AUTOGRADER_BENCH_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
TICKS = os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def database(backend: str, tmp: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{tmp / 'bench.db'}"
        return
    name = f"bench_{uuid.uuid4().hex[:8]}"
    admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def prepare(url: str) -> str:
    """Migrate, load ch9, create a student; returns the student's API token."""
    upgrade(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    with sessions() as session:
        course_sets.load_dir(session, root=REPO_ROOT / "problems" / "ch9", grader=None)
        user, _ = accounts.create_user(session, email="bench@example.com", role=Role.STUDENT)
        _, token = accounts.create_token(session, user=user, name="bench")
        session.commit()
    engine.dispose()
    return token


def cpu_ms(pid: int) -> float:
    """User + system CPU of a process (all its threads), in milliseconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / TICKS


@contextlib.contextmanager
def server(url: str, tmp: Path) -> Iterator[tuple[int, int]]:
    port = free_port()
    env = {
        **os.environ,
        "AUTOGRADER_DATA_DIR": str(tmp / "data"),
        "AUTOGRADER_DATABASE_URL": url,
        "AUTOGRADER_SECRET_KEY": "b" * 40,
        "AUTOGRADER_LOAD_PROBLEMS_ON_START": "false",
        "AUTOGRADER_PREWARM_SANDBOX": "false",
        "AUTOGRADER_RATE_LIMITS": "false",  # one token submitting flat out is the load measured here
        "AUTOGRADER_WORKERS": "2",
    }
    cmd = [sys.executable, "-m", "app.cli.main", "serve", "--port", str(port)]
    proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 180  # a loaded machine takes a while to import torch
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the server did not start")
            time.sleep(0.2)
        yield port, proc.pid
    finally:
        proc.terminate()
        proc.wait(30)


async def load(port: int, token: str, clients: int, per_client: int) -> tuple[list[float], float]:
    """Every client posts ``per_client`` answers one after the other; returns latencies (ms) and wall seconds."""
    samples: list[float] = []
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", headers=headers, limits=limits, timeout=30) as c:

        async def client(index: int) -> None:
            for i in range(per_client):
                problem, answers = CASES[(index + i) % len(CASES)]
                started = time.perf_counter()
                # A keep-alive connection the server closes as it is reused (its idle timeout) fails the post
                # before it is read; sent again with the same Idempotency-Key it cannot be stored twice.
                key = {"Idempotency-Key": uuid.uuid4().hex}
                for retry in range(3):
                    try:
                        resp = await c.post(
                            "/api/v1/submissions",
                            params={"wait": 10},
                            json={"problem_set": "ch9", "problem": problem, "answers": answers},
                            headers=key,
                        )
                        break
                    except httpx.TransportError:
                        if retry == 2:
                            raise
                body = resp.json()
                assert body["status"] == "graded" and body["final_score"] == body["max_score"], body
                samples.append((time.perf_counter() - started) * 1000)

        await client(-1)  # warm the set's folder and the imports before measuring
        samples.clear()
        started = time.perf_counter()
        await asyncio.gather(*(client(i) for i in range(clients)))
        return samples, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--levels", default="1,5,20,50")
    parser.add_argument("--per-client", type=int, default=20)
    parser.add_argument("--backends", default="sqlite,postgres")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    baseline = run_inprocess(load_problem_set(REPO_ROOT / "problems" / "ch9"), 500)
    per_second = 1000 / (sum(baseline) / len(baseline))
    per_answer_ms = 1000 / per_second
    print(f"baseline: graders.grade in-process, {per_second:.0f} answers/s (p50 {percentile(baseline, 0.5):.2f} ms, "
          f"{per_answer_ms:.2f} ms each)")  # fmt: skip
    print(f"{'backend':<10}{'clients':>8}{'answers':>9}{'graded/s':>10}{'p50 ms':>9}{'p95 ms':>9}{'p99 ms':>9}"
          f"{'server CPU ms/answer':>22}{'in-process ms/answer':>22}")  # fmt: skip
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory() as tmp_name, database(backend, Path(tmp_name)) as url:
            token = prepare(url)
            with server(url, Path(tmp_name)) as (port, pid):
                for clients in levels:
                    before = cpu_ms(pid)
                    samples, wall = asyncio.run(load(port, token, clients, args.per_client))
                    cpu = (cpu_ms(pid) - before) / len(samples)
                    print(f"{backend:<10}{clients:>8}{len(samples):>9}{len(samples) / wall:>10.1f}"
                          f"{percentile(samples, 0.5):>9.1f}{percentile(samples, 0.95):>9.1f}"
                          f"{percentile(samples, 0.99):>9.1f}{cpu:>22.2f}{per_answer_ms:>22.2f}",
                          flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
