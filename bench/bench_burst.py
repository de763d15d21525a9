"""P2: a burst of q5 submissions through the HTTP API, drained by the embedded workers (SQLite), and again by two
`autograder worker` processes on PostgreSQL + Redis (Celery).

Each run starts real processes on 127.0.0.1: `autograder serve` (and, scaled out, two workers with one slot each, so
both runs grade on 2 slots). 20 students post the burst (a correct solution and wrong ones, from
problems/attention's solutions and mutants, in turn) as fast as the API takes them; then every submission is read
back and checked against its expected result. The expected result of each file is its grading in a quiet pre-pass
through the same API, one at a time, before the burst: the same checks must pass and fail, and the correct files
must score full marks. Drain time is from the first submission stored to the last one graded (the server's
created_at / graded_at); time to graded is graded_at - created_at per submission.

Baseline, from the same run: the pre-pass's own time per submission (one at a time, nothing queued), as the
submissions/s a single sequential client would see.

    .venv/bin/python -m bench.bench_burst [--n 200] [--modes embedded,celery] [--metrics]

--metrics: scrape /metrics (a `metrics`-scoped token, as Prometheus would) once the burst is posted (the queue is
full) and again once it is drained, and print the autograder_* samples of both.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from app.config import REPO_ROOT
from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.users.models import Role
from bench.bench_fill_in import percentile, trimmed
from bench.bench_fill_in_concurrency import database
from bench.serve_stack import stack

SET = REPO_ROOT / "problems" / "attention"
# (file, correct): submitted in turn, so a burst of 200 is about a third correct solutions.
FILES = [
    ("solutions/q5/masked_fill.py", True),
    ("mutants/q5/missing_sqrt_dk.py", False),
    ("solutions/q5/einsum_stable_softmax.py", True),
    ("mutants/q5/wrong_softmax_axis.py", False),
    ("mutants/q5/inverted_mask.py", False),
    ("mutants/q5/weights_transposed.py", False),
]
STUDENTS = 20
POST_CONCURRENCY = 20
DRAIN_TIMEOUT_S = 900.0


def prepare(url: str) -> list[str]:
    """Migrate, load the attention set (no mutant gate: it is the shipped set), create students; their tokens, and
    last a `metrics`-scoped token of an admin."""
    upgrade(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    tokens = []
    with sessions() as session:
        course_sets.load_dir(session, root=SET, grader=None)
        for i in range(STUDENTS):
            user, _ = accounts.create_user(session, email=f"burst{i}@example.com", role=Role.STUDENT)
            tokens.append(accounts.create_token(session, user=user, name="bench")[1])
        admin, _ = accounts.create_user(session, email="prometheus@example.com", role=Role.ADMIN)
        tokens.append(accounts.create_token(session, user=admin, name="prometheus", scopes=["metrics"])[1])
        session.commit()
    engine.dispose()
    return tokens


def _checks(body: dict[str, Any]) -> dict[str, bool | None]:
    return {c["name"]: c["passed"] for c in body["checks"]}


async def prepass(c: httpx.AsyncClient, token: str) -> tuple[dict[str, dict[str, bool | None]], list[float]]:
    """Grade each file once, one at a time: its expected checks; and the seconds each took (the baseline)."""
    expected, seconds = {}, []
    for name, correct in FILES:
        started = time.perf_counter()
        resp = await c.post("/api/v1/submissions", params={"wait": 120}, json=_body(name),
                            headers={"Authorization": f"Bearer {token}"})  # fmt: skip
        seconds.append(time.perf_counter() - started)
        body = resp.json()
        assert body["status"] == "graded", body
        full = body["final_score"] == body["max_score"]
        assert full == correct, f"{name}: scored {body['final_score']}/{body['max_score']} in the quiet pre-pass"
        expected[name] = _checks(body)
    return expected, seconds


def _body(name: str) -> dict[str, str]:
    return {"problem_set": "attention", "problem": "q5", "code": (SET / name).read_text(encoding="utf-8")}


async def burst(port: int, tokens: list[str], n: int, metrics_token: str | None = None) -> dict[str, Any]:
    scraped: list[str] = []
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=120) as c:

        async def scrape() -> None:
            if metrics_token is not None:
                resp = await c.get("/metrics", headers={"Authorization": f"Bearer {metrics_token}"})
                resp.raise_for_status()
                scraped.append(trimmed(resp.text))

        expected, baseline = await prepass(c, tokens[0])
        gate = asyncio.Semaphore(POST_CONCURRENCY)
        posted: list[tuple[int, str, str]] = []  # (id, file, token)

        async def post(i: int) -> None:
            name, _ = FILES[i % len(FILES)]
            token = tokens[i % len(tokens)]
            async with gate:
                resp = await c.post("/api/v1/submissions", json=_body(name),
                                    headers={"Authorization": f"Bearer {token}"})  # fmt: skip
            assert resp.status_code == 202, resp.text
            posted.append((resp.json()["id"], name, token))

        started = time.perf_counter()
        await asyncio.gather(*(post(i) for i in range(n)))
        posting = time.perf_counter() - started
        await scrape()
        bodies = await _drain(c, posted)
        await scrape()
    ok = mismatched = 0
    mismatches: list[str] = []
    times: list[float] = []
    created, graded = [], []
    for sub_id, name, _ in posted:
        body = bodies[sub_id]
        created.append(_ts(body["created_at"]))
        if body["status"] != "graded":
            mismatched += 1
            mismatches.append(f"#{sub_id} {name}: {body['status']} {body.get('message')}")
            continue
        graded.append(_ts(body["graded_at"]))
        times.append(_ts(body["graded_at"]) - _ts(body["created_at"]))
        if _checks(body) == expected[name]:
            ok += 1
        else:
            mismatched += 1
            diff = sorted(k for k, v in _checks(body).items() if expected[name].get(k) != v)
            mismatches.append(f"#{sub_id} {name}: checks differ from the pre-pass: {', '.join(diff)}")
    drain = (max(graded) - min(created)) if graded else float("nan")
    return {"n": n, "posting_s": posting, "drain_s": drain, "times": times, "ok": ok, "mismatched": mismatched,
            "mismatches": mismatches, "baseline": baseline, "scraped": scraped}  # fmt: skip


async def _drain(c: httpx.AsyncClient, posted: list[tuple[int, str, str]]) -> dict[int, dict[str, Any]]:
    """Wait until every submission is finished (one list request per student a second), then read each one."""
    pending = {sub_id: token for sub_id, _, token in posted}
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while pending and time.monotonic() < deadline:
        await asyncio.sleep(1.0)
        for token in set(pending.values()):
            headers = {"Authorization": f"Bearer {token}"}
            resp = await c.get("/api/v1/submissions", params={"limit": 500}, headers=headers)
            for row in resp.json():
                if row["id"] in pending and row["status"] in ("graded", "error"):
                    del pending[row["id"]]
    if pending:
        raise RuntimeError(f"{len(pending)} submissions still not graded after {DRAIN_TIMEOUT_S:.0f} s")
    bodies = {}
    for sub_id, _, token in posted:
        resp = await c.get(f"/api/v1/submissions/{sub_id}", headers={"Authorization": f"Bearer {token}"})
        bodies[sub_id] = resp.json()
    return bodies


def _ts(text: str) -> float:
    return datetime.fromisoformat(text).timestamp()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--n", type=int, default=200, help="submissions in the burst (a quick run: --n 30)")
    parser.add_argument("--modes", default="embedded,celery")
    parser.add_argument("--metrics", action="store_true", help="print /metrics when posted and when drained")
    args = parser.parse_args()
    correct = sum(c for _, c in FILES)
    print(f"P2: a burst of {args.n} q5 submissions ({len(FILES)} files in turn: {correct} correct, "
          f"{len(FILES) - correct} wrong), {STUDENTS} students")  # fmt: skip
    print(f"{'mode':<28}{'drain s':>9}{'subs/s':>8}{'p50 s':>8}{'p95 s':>8}{'verified':>10}{'mismatch':>10}"
          f"{'baseline subs/s':>17}")  # fmt: skip
    for mode in args.modes.split(","):
        backend = "sqlite" if mode == "embedded" else "postgres"
        with tempfile.TemporaryDirectory() as tmp_name, database(backend, Path(tmp_name)) as url:
            *tokens, metrics_token = prepare(url)
            with stack(mode, url, Path(tmp_name)) as port:
                r = asyncio.run(burst(port, tokens, args.n, metrics_token if args.metrics else None))
            label = "embedded, SQLite, 2 workers" if mode == "embedded" else "celery, PG+Redis, 2 workers"
            sequential = len(r["baseline"]) / sum(r["baseline"])
            times = r["times"] or [float("nan")]
            print(f"{label:<28}{r['drain_s']:>9.1f}{r['n'] / r['drain_s']:>8.2f}{percentile(times, 0.5):>8.1f}"
                  f"{percentile(times, 0.95):>8.1f}{r['ok']:>10}{r['mismatched']:>10}{sequential:>17.2f}",
                  flush=True)  # fmt: skip
            for line in r["mismatches"][:10]:
                print(f"    {line}")
            for when, text in zip(("posted, before the drain", "drained"), r["scraped"], strict=False):
                print(f"\n/metrics of {label}, {when} (autograder_* samples, buckets and _created left out):")
                print(text, flush=True)


if __name__ == "__main__":
    main()
