"""Fill-in grading latency, end to end: HTTP POST ?wait -> stored -> claimed by an embedded worker -> graded -> read.

Baseline, measured in the same run: the same answers graded in-process by graders.answers alone (no HTTP, no
database, no worker). The difference is what the service adds.

    .venv/bin/python -m bench.bench_fill_in [--n 200] [--metrics]

--metrics: after the run, scrape the server's /metrics (with a `metrics`-scoped token, as Prometheus would) and
print its autograder_* lines: what docs/operations.md, "Metrics", shows.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from app.config import REPO_ROOT, Settings
from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.main import create_app
from app.migrate import upgrade
from app.users.models import Role
from graders.grade import grade_submission
from graders.problemset.loader import load_problem_set

CASES = [
    ("q1", {"b1": "\\sqrt{d_k}", "b2": "V", "b3": "查找的信息", "b4": "匹配", "b5": "内容"}),
    ("q3", {"b1": "顺序", "b2": "positional encoding", "b3": "因果掩码", "b4": "decoder", "b5": "encoder"}),
    ("q2", {"b1": "（B）"}),
]


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=200)
    parser.add_argument("--metrics", action="store_true", help="print the server's autograder_* metrics after the run")
    args = parser.parse_args()
    n = args.n
    scraped = ""
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(
            data_dir=Path(tmp),
            secret_key="b" * 40,
            workers=2,
            load_problems_on_start=False,
            prewarm_sandbox=False,
            rate_limits=False,  # one token submits n times as fast as it can: what is measured, not abuse
        )
        upgrade(settings.resolved_database_url)
        sessions = make_session_factory(make_engine(settings.resolved_database_url))
        with sessions() as session:
            course_sets.load_dir(session, root=REPO_ROOT / "problems" / "ch9", grader=None)
            user, _ = accounts.create_user(session, email="bench@example.com", role=Role.STUDENT)
            _, token = accounts.create_token(session, user=user, name="bench")
            admin, _ = accounts.create_user(session, email="prometheus@example.com", role=Role.ADMIN)
            _, metrics_token = accounts.create_token(session, user=admin, name="prometheus", scopes=["metrics"])
            session.commit()
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(create_app(settings), port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            e2e = run_http(port, token, n)
            if args.metrics:
                scraped = scrape(port, metrics_token)
        finally:
            server.should_exit = True
            thread.join(10)
    loaded = load_problem_set(REPO_ROOT / "problems" / "ch9")
    baseline = run_inprocess(loaded, n)
    print(f"fill-in grading, n={n} (ch9 q1/q3/q2 in turn)")
    print(f"{'path':<44}{'p50 ms':>10}{'p95 ms':>10}")
    for label, samples in (
        ("end to end: HTTP + SQLite + embedded worker", e2e),
        ("baseline: graders.answers in-process", baseline),
    ):
        print(f"{label:<44}{percentile(samples, 0.5):>10.2f}{percentile(samples, 0.95):>10.2f}")
    print(f"service overhead at p50: {statistics.median(e2e) - statistics.median(baseline):.2f} ms")
    if scraped:
        print("\n/metrics after the run (autograder_* samples, buckets and _created left out):")
        print(scraped)


def scrape(port: int, token: str) -> str:
    """The server's autograder_* samples, as Prometheus would scrape them (buckets and _created lines left out)."""
    resp = httpx.get(f"http://127.0.0.1:{port}/metrics", headers={"Authorization": f"Bearer {token}"})
    resp.raise_for_status()
    return trimmed(resp.text)


def trimmed(text: str) -> str:
    keep = []
    for line in text.splitlines():
        if line.startswith("autograder_") and "_bucket{" not in line and "_created" not in line.split(" ")[0]:
            keep.append(line)
    return "\n".join(keep)


def run_http(port: int, token: str, n: int) -> list[float]:
    samples = []
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {token}"}) as client:
        for i in range(n + 5):
            problem, answers = CASES[i % len(CASES)]
            started = time.perf_counter()
            resp = client.post(
                "/api/v1/submissions",
                params={"wait": 10},
                json={"problem_set": "ch9", "problem": problem, "answers": answers},
            )
            elapsed = (time.perf_counter() - started) * 1000
            body = resp.json()
            assert body["status"] == "graded" and body["final_score"] == body["max_score"], body
            if i >= 5:  # the first few warm caches (set unpacking, imports)
                samples.append(elapsed)
    return samples


def _no_code_grader():  # type: ignore[no-untyped-def]
    raise AssertionError("fill-in answers never need the sandbox")


def run_inprocess(loaded, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    samples = []
    for i in range(n + 5):
        problem_id, answers = CASES[i % len(CASES)]
        started = time.perf_counter()
        result = grade_submission(loaded, problem_id, {"answers": answers}, _no_code_grader)
        elapsed = (time.perf_counter() - started) * 1000
        assert result.score == result.max_score
        if i >= 5:
            samples.append(elapsed)
    return samples


if __name__ == "__main__":
    main()
