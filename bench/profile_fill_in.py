"""Where one fill-in answer's server CPU goes: the API app in process, driven through ASGI (no sockets), one answer
after another, under cProfile, with the SQL statements each answer sends.

The app's trips to worker threads are run on the calling thread here, so the one profiler sees the whole request;
what the split shows is each part's own CPU, not the thread hand-offs (uvicorn's HTTP parsing and the hand-offs
are what `bench.bench_fill_in_concurrency` adds on top). Parts (cumulative time of the function that does it):

- middleware: everything outside the endpoint (security headers, request id, access log + metrics, server errors,
  session cookie, NUL, disk space, body size) and FastAPI's routing and dependency solving, less the parts below;
- auth: the bearer token or the cookie session, looked up with the user and their roles (``get_principal``);
- rate limit: the per-user submission counter (``AUTOGRADER_RATE_LIMITS``; off in the concurrency bench);
- parse: the JSON body into ``SubmissionCreate`` (``parse_api_body``);
- store: ``service.store`` (the set, its version, the membership and policy, the grading in the request, the
  attempt, the row with its grade's rows, webhooks and passback, and the commit);
- response: the release seal, ``submission_public`` and FastAPI's serialization of the response model.

    .venv/bin/python -m bench.profile_fill_in [--n 300] [--backend sqlite|postgres] [--top 25] [--rate-limits]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import pstats
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio.to_thread
import httpx
from sqlalchemy import event

from app.config import Settings
from app.main import create_app
from bench.bench_fill_in import CASES
from bench.bench_fill_in_concurrency import database, prepare

# (label, module path suffix, function name): a part is the cumulative time of its function(s)
PARTS: list[tuple[str, str, str]] = [
    ("auth", "app/deps.py", "get_principal"),
    ("rate limit", "app/ratelimit/service.py", "submission"),
    ("parse", "app/submissions/intake.py", "parse_api_body"),
    ("store (all of it)", "app/submissions/service.py", "store"),
    ("  resolve the set", "app/courses/service.py", "resolve"),
    ("  its version", "app/courses/service.py", "version_of"),
    ("  grade", "app/worker/inline.py", "grade"),
    ("  insert + record", "app/submissions/allocation.py", "store_next_attempt"),
    ("    of which record", "app/worker/inline.py", "record"),
    ("response: seal", "app/submissions/release.py", "seal_of_new"),
    ("response: view", "app/submissions/presenter.py", "submission_public"),
    ("response: serialize", "fastapi/routing.py", "serialize_response"),
    ("endpoint", "app/submissions/router.py", "create_submission"),
    ("whole request", "fastapi/applications.py", "__call__"),
]


async def _inline(func: Callable[..., Any], *args: Any, **_kwargs: Any) -> Any:
    return func(*args)


def _cumulative(stats: pstats.Stats, suffix: str, name: str) -> float:
    total = 0.0
    for (path, _line, func), (_cc, _nc, _tt, ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        if func == name and path.endswith(suffix):
            total += ct
    return total


async def run(app: Any, token: str, n: int, profile: cProfile.Profile | None) -> float:
    transport = httpx.ASGITransport(app=app)
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", headers=headers) as client:
        started = time.process_time()
        for i in range(n):
            problem, answers = CASES[i % len(CASES)]
            if profile is not None:
                profile.enable()
            resp = await client.post(
                "/api/v1/submissions",
                params={"wait": 10},
                json={"problem_set": "ch9", "problem": problem, "answers": answers},
                headers={"Idempotency-Key": uuid.uuid4().hex},
            )
            if profile is not None:
                profile.disable()
            body = resp.json()
            assert body["status"] == "graded" and body["final_score"] == body["max_score"], body
        return (time.process_time() - started) * 1000 / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--backend", default="sqlite", choices=["sqlite", "postgres"])
    parser.add_argument("--top", type=int, default=25, help="also print the top N functions by own time")
    parser.add_argument("--rate-limits", action="store_true", help="with the submission rate limiter on")
    args = parser.parse_args()
    anyio.to_thread.run_sync = _inline  # type: ignore[assignment]  # one thread: cProfile sees it all
    with tempfile.TemporaryDirectory() as tmp_name, database(args.backend, Path(tmp_name)) as url:
        tmp = Path(tmp_name)
        token = prepare(url)
        settings = Settings(
            data_dir=tmp / "data",
            database_url=url,
            secret_key="b" * 40,
            workers=2,
            load_problems_on_start=False,
            prewarm_sandbox=False,
            rate_limits=args.rate_limits,
        )
        app = create_app(settings, start_workers=False)  # inline grading: the embedded mode's request path
        statements = 0

        def count(*_args: Any) -> None:
            nonlocal statements
            statements += 1

        event.listen(app.state.engine, "before_cursor_execute", count)
        asyncio.run(run(app, token, 30, None))  # warm: imports, the set's folder, the connection pool
        statements = 0
        plain_ms = asyncio.run(run(app, token, args.n, None))
        per_answer_sql = statements / args.n
        profile = cProfile.Profile()
        asyncio.run(run(app, token, args.n, profile))
        app.state.runtime.close()
    stats = pstats.Stats(profile)
    print(f"{args.backend}: {args.n} answers one after another, process CPU {plain_ms:.2f} ms per answer without "
          f"the profiler, {per_answer_sql:.1f} SQL statements per answer")  # fmt: skip
    parts = {label: _cumulative(stats, suffix, name) * 1000 / args.n for label, suffix, name in PARTS}
    print("cumulative ms per answer under cProfile (its overhead inflates every part alike, roughly 2x):")
    for label, ms in parts.items():
        print(f"  {label:<22}{ms:8.3f}")
    rest = parts["whole request"] - sum(
        parts[k]
        for k in (
            "auth",
            "rate limit",
            "parse",
            "store (all of it)",
            "response: seal",
            "response: view",
            "response: serialize",
        )
    )
    print(f"  {'middleware + routing':<22}{rest:8.3f}  (the whole request less the parts above)")
    if args.top:
        stats.sort_stats("tottime").print_stats(args.top)


if __name__ == "__main__":
    main()
