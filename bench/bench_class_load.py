"""A class before a deadline: N simulated students (default 300) log in and submit through HTTP, against the
embedded server (SQLite, grading in the `serve` process) and the scale-out stack (PostgreSQL + Celery on Redis, two
`autograder worker` processes). Not a test: a course runs it before a deadline to see what its machine takes.

Each student is one bounded request loop with its own cookie jar, on 127.0.0.1 only: it logs in with its password
(`POST /api/v1/auth/login`; with ``--login page`` through the login form instead: ``GET /login`` for its CSRF
token, then ``POST /login``), reads the problem, posts a fill-in answer to ch9 q1 with ``?wait=10`` (a wrong blank
first, then all right: two attempts), and every ``--q5-every``-th student also posts a q5 file of
problems/attention (correct solutions and mutants in turn) and polls it until graded. Students start over
``--window`` seconds at a rate that rises towards the deadline at its end (start = window * sqrt(U), so half of them
come in its last 30 %). A 503 or 429 is retried after its Retry-After (at most 5 times, then the student gives up
and its submission counts as lost); a connection the server closed as it was reused is sent again with the same
Idempotency-Key, so it is never stored twice.

It prints, per run: request latency p50/p95/p99 by kind, errors by status, time to graded p50/p95/p99 (the server's
created_at to graded_at) and the grading completion time (first submission stored to last one graded). Baseline,
from the same run and stack: a class of ``--baseline`` students (default 30) first, same mix.

It fails (exit status 1) on any 5xx other than 503/507, a submission that was lost (given up, or never graded), a
grade that is not the expected one (fill-in: the score graders.grade gives in-process; q5: full marks exactly for
the correct solutions), or one graded twice (a second set of check rows, a grading attempt beyond the first, two
submissions with one attempt number), read from the database after the run.

    .venv/bin/python -m bench.bench_class_load [--students 300] [--baseline 30] [--window 40] [--q5-every 10]
        [--modes embedded,celery] [--login api|page]

The Celery run uses ``AUTOGRADER_BENCH_REDIS_URL`` (default redis://127.0.0.1:6379/0), flushed first; PostgreSQL:
``AUTOGRADER_BENCH_POSTGRES_URL`` (a fresh database is created and dropped). In both modes the API grades the fill-in
answers itself and the workers the q5 files; ``AUTOGRADER_GRADE_ANSWERS_INLINE=false`` in the environment sends the
answers through the workers too (through Celery in the scale-out run, as every submission went before).
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from unittest import mock

import httpx
from sqlalchemy import func, select

from app.config import REPO_ROOT
from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.security import hash_password
from app.submissions.models import CheckResultRow, Status, Submission
from app.users.models import Role
from bench.bench_fill_in import percentile
from bench.bench_fill_in_concurrency import database
from bench.serve_stack import stack
from graders.grade import grade_submission
from graders.problemset.loader import load_problem_set

ATTENTION = REPO_ROOT / "problems" / "attention"
CH9 = REPO_ROOT / "problems" / "ch9"
PASSWORD = "class-load-" + "p" * 12  # the simulated students' password, on a throwaway database
# Attempt 1 has one blank wrong, attempt 2 all right.
FILL_IN = [
    {"b1": "\\sqrt{d_k}", "b2": "V", "b3": "查找的信息", "b4": "匹配", "b5": "标签"},
    {"b1": "\\sqrt{d_k}", "b2": "V", "b3": "查找的信息", "b4": "匹配", "b5": "内容"},
]
Q5_FILES = [
    ("solutions/q5/masked_fill.py", True),
    ("mutants/q5/missing_sqrt_dk.py", False),
    ("solutions/q5/einsum_stable_softmax.py", True),
    ("mutants/q5/wrong_softmax_axis.py", False),
]
RETRIES = 5
CLIENT_TIMEOUT_S = 120.0
GRADED_WITHIN_S = 900.0  # a student stops polling after this: its submission counts as lost
STACK_ENV = {
    # A class comes from many addresses; here every student is 127.0.0.1, which the per-address login limit
    # (50 in 5 minutes) would stop after 50 students. The limits are tested in tests/ops.
    "AUTOGRADER_RATE_LIMITS": "false",
    "AUTOGRADER_LOG_FORMAT": "text",
}


@dataclass
class Tally:
    latency: dict[str, list[float]] = field(default_factory=dict)  # kind -> seconds per request
    statuses: Counter[int] = field(default_factory=Counter)
    transport_retries: int = 0
    stalls: int = 0
    lost: list[str] = field(default_factory=list)  # what a student could not get done, and why
    posted: list[tuple[int, str, Any]] = field(default_factory=list)  # (id, kind, expected)

    def record(self, kind: str, seconds: float, status: int) -> None:
        self.latency.setdefault(kind, []).append(seconds)
        self.statuses[status] += 1


def expected_fill_in() -> list[float]:
    loaded = load_problem_set(CH9)

    def no_sandbox():  # type: ignore[no-untyped-def]
        raise AssertionError("fill-in answers never need the sandbox")

    return [grade_submission(loaded, "q1", {"answers": a}, no_sandbox).score for a in FILL_IN]


def prepare(url: str, classes: dict[str, int]) -> dict[str, list[str]]:
    """Migrate, load ch9 and attention, create each class's students (in the default offering); their emails."""
    upgrade(url)
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    emails = {name: [f"{name}{i}@example.com" for i in range(n)] for name, n in classes.items()}
    # Set-up only: one argon2 hash for every student (each costs ~0.1 s of CPU); every login still verifies it.
    shared_hash = hash_password(PASSWORD)
    with sessions() as session, mock.patch.object(accounts, "hash_password", lambda _password: shared_hash):
        for root in (CH9, ATTENTION):
            course_sets.load_dir(session, root=root, grader=None)
        for email in (e for group in emails.values() for e in group):
            accounts.create_user(session, email=email, role=Role.STUDENT, password=PASSWORD)
        session.commit()
    engine.dispose()
    return emails


async def request(c: httpx.AsyncClient, tally: Tally, kind: str, method: str, path: str, **kw: Any) -> httpx.Response:
    """One request as a patient client makes it: 503/429 waited out (Retry-After), a dropped keep-alive resent."""
    if method == "POST":  # resent with the same key, a post is never stored twice
        kw["headers"] = {**kw.get("headers", {}), "Idempotency-Key": uuid.uuid4().hex}
    for attempt in range(RETRIES + 1):
        started = time.perf_counter()
        try:
            resp = await c.request(method, path, **kw)
        except httpx.TransportError as exc:  # a timeout (no answer within 120 s: a stall) or a dropped connection
            tally.stalls += isinstance(exc, httpx.TimeoutException)
            tally.transport_retries += 1
            if attempt == RETRIES:
                raise
            continue
        tally.record(kind, time.perf_counter() - started, resp.status_code)
        if resp.status_code not in (429, 503) or attempt == RETRIES:
            return resp
        await asyncio.sleep(min(30.0, float(resp.headers.get("Retry-After", "1"))))
    raise AssertionError("unreachable")


async def log_in(c: httpx.AsyncClient, tally: Tally, email: str, login: str) -> str | None:
    """The API's login, or the page's (the form with its CSRF token); None, or what went wrong."""
    if login == "api":
        resp = await request(c, tally, "login", "POST", "/api/v1/auth/login",
                             json={"email": email, "password": PASSWORD})  # fmt: skip
        return None if resp.status_code == 200 else f"login {resp.status_code} {resp.text[:200]}"
    page = await request(c, tally, "login page", "GET", "/login")
    found = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    if page.status_code != 200 or not found:
        return f"login page {page.status_code}"
    form = {"email": email, "password": PASSWORD, "csrf_token": found.group(1), "next": "/"}
    resp = await request(c, tally, "login", "POST", "/login", data=form)
    return None if resp.status_code == 303 else f"login form {resp.status_code} {resp.text[:200]}"


async def student(
    port: int, email: str, index: int, q5_every: int, start_s: float, tally: Tally, login: str = "api"
) -> None:
    await asyncio.sleep(start_s)
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=CLIENT_TIMEOUT_S) as c:
        failed = await log_in(c, tally, email, login)
        if failed is not None:
            tally.lost.append(f"{email}: {failed}")
            return
        await request(c, tally, "read problem", "GET", "/api/v1/problem-sets/ch9/problems/q1")
        for attempt, answers in enumerate(FILL_IN):
            body = {"problem_set": "ch9", "problem": "q1", "answers": answers}
            resp = await request(c, tally, "post fill-in ?wait=10", "POST", "/api/v1/submissions",
                                 params={"wait": 10}, json=body)  # fmt: skip
            if resp.status_code not in (200, 202):
                tally.lost.append(f"{email}: fill-in {resp.status_code} {resp.text[:200]}")
                return
            tally.posted.append((resp.json()["id"], "fill-in", attempt))
        if index % q5_every:
            return
        name, correct = Q5_FILES[(index // q5_every) % len(Q5_FILES)]
        code = (ATTENTION / name).read_text(encoding="utf-8")
        resp = await request(c, tally, "post q5", "POST", "/api/v1/submissions",
                             json={"problem_set": "attention", "problem": "q5", "code": code})  # fmt: skip
        if resp.status_code != 202:
            tally.lost.append(f"{email}: q5 {resp.status_code} {resp.text[:200]}")
            return
        sub_id = resp.json()["id"]
        tally.posted.append((sub_id, "q5", correct))
        deadline = time.monotonic() + GRADED_WITHIN_S
        while time.monotonic() < deadline:  # a student refreshing the page every 3 s
            await asyncio.sleep(3.0)
            resp = await request(c, tally, "poll q5", "GET", f"/api/v1/submissions/{sub_id}")
            if resp.status_code == 200 and resp.json()["status"] in ("graded", "error"):
                return
        tally.lost.append(f"{email}: q5 #{sub_id} not graded within {GRADED_WITHIN_S:.0f} s")


async def run_class(
    port: int, emails: list[str], window_s: float, q5_every: int, seed: int, login: str = "api"
) -> Tally:
    tally = Tally()
    rng = random.Random(seed)
    starts = [window_s * math.sqrt(rng.random()) for _ in emails]  # density rising linearly to the deadline
    await asyncio.gather(*(student(port, e, i, q5_every, starts[i], tally, login) for i, e in enumerate(emails)))
    return tally


def verify(url: str, tally: Tally, fill_in_scores: list[float]) -> dict[str, Any]:
    """Read every posted submission back from the database: graded once, with the expected score."""
    engine = make_engine(url)
    sessions = make_session_factory(engine)
    wrong: list[str] = []
    to_graded: dict[str, list[float]] = {"fill-in": [], "q5": []}
    created, graded = [], []
    ids = [sub_id for sub_id, _, _ in tally.posted]
    with sessions() as session:
        rows = {s.id: s for s in session.scalars(select(Submission).where(Submission.id.in_(ids)))}
        check_rows = dict(
            session.execute(
                select(CheckResultRow.submission_id, func.count())
                .where(CheckResultRow.submission_id.in_(ids))
                .group_by(CheckResultRow.submission_id)
            ).all()
        )
        for sub_id, kind, expected in tally.posted:
            sub = rows.get(sub_id)
            if sub is None or sub.status != Status.GRADED or sub.grade is None or sub.graded_at is None:
                wrong.append(f"#{sub_id} {kind}: {sub and sub.status} {sub and sub.error}")
                continue
            created.append(sub.created_at.timestamp())
            graded.append(sub.graded_at.timestamp())
            to_graded[kind].append((sub.graded_at - sub.created_at).total_seconds())
            score, full = sub.grade.auto_score, sub.grade.max_score
            if kind == "fill-in" and not math.isclose(score, fill_in_scores[expected]):
                wrong.append(f"#{sub_id} fill-in attempt {expected + 1}: {score}, expected {fill_in_scores[expected]}")
            if kind == "q5" and (score == full) != expected:
                wrong.append(f"#{sub_id} q5 ({'correct' if expected else 'mutant'}): {score}/{full}")
            if sub.grading_attempts != 0 or check_rows.get(sub_id, 0) != len(sub.checks) or not sub.checks:
                wrong.append(f"#{sub_id}: graded {sub.grading_attempts + 1} times, {check_rows.get(sub_id)} check rows")
        duplicates = session.execute(
            select(Submission.user_id, Submission.problem_id, Submission.attempt)
            .where(Submission.id.in_(ids))
            .group_by(Submission.user_id, Submission.problem_id, Submission.attempt)
            .having(func.count() > 1)
        ).all()
        wrong += [f"user {u} {p}: attempt {a} twice" for u, p, a in duplicates]
    engine.dispose()
    drain = max(graded) - min(created) if graded else float("nan")
    return {"wrong": wrong, "to_graded": to_graded, "drain_s": drain}


def report(label: str, students: int, tally: Tally, checked: dict[str, Any], wall_s: float) -> list[str]:
    """Print one run; returns its failures."""
    q5 = sum(1 for _, kind, _ in tally.posted if kind == "q5")
    print(f"\n{label}: {students} students, {len(tally.posted) - q5} fill-in + {q5} q5 submissions, "
          f"{sum(tally.statuses.values())} requests in {wall_s:.1f} s")  # fmt: skip
    print(f"  {'request':<24}{'n':>6}{'p50 ms':>10}{'p95 ms':>10}{'p99 ms':>10}")
    for kind, samples in tally.latency.items():
        ms = [s * 1000 for s in samples]
        print(f"  {kind:<24}{len(ms):>6}{percentile(ms, 0.5):>10.0f}{percentile(ms, 0.95):>10.0f}"
              f"{percentile(ms, 0.99):>10.0f}")  # fmt: skip
    print(f"  {'to graded (server)':<24}{'n':>6}{'p50 s':>10}{'p95 s':>10}{'p99 s':>10}")
    for kind, seconds in checked["to_graded"].items():
        if seconds:
            print(f"  {kind:<24}{len(seconds):>6}{percentile(seconds, 0.5):>10.2f}{percentile(seconds, 0.95):>10.2f}"
                  f"{percentile(seconds, 0.99):>10.2f}")  # fmt: skip
    print(f"  grading complete {checked['drain_s']:.1f} s after the first submission was stored")
    by_status = ", ".join(f"{s}: {n}" for s, n in sorted(tally.statuses.items()))
    print(f"  responses by status: {by_status}; requests resent: {tally.transport_retries} (of which timed out "
          f"after {CLIENT_TIMEOUT_S:.0f} s: {tally.stalls})")  # fmt: skip
    failures = [f"{s} x{n}" for s, n in tally.statuses.items() if s >= 500 and s not in (503, 507)]
    failures = [f"server errors: {', '.join(failures)}"] if failures else []
    failures += tally.lost + checked["wrong"]
    print(f"  verified: {len(tally.posted) - len(checked['wrong'])} of {len(tally.posted)} graded once as expected; "
          f"lost: {len(tally.lost)}")  # fmt: skip
    for line in failures[:20]:
        print(f"    FAIL {line}")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--students", type=int, default=300)
    parser.add_argument("--baseline", type=int, default=30, help="the smaller class run first on the same stack")
    parser.add_argument("--window", type=float, default=40.0, help="seconds over which the students arrive")
    parser.add_argument("--q5-every", type=int, default=10, help="every k-th student also submits q5")
    parser.add_argument("--modes", default="embedded,celery")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--login", choices=("api", "page"), default="api", help="log in by the API or the form")
    args = parser.parse_args()
    fill_in_scores = expected_fill_in()
    failures: list[str] = []
    for mode in args.modes.split(","):
        backend = "sqlite" if mode == "embedded" else "postgres"
        label = "embedded (SQLite, 2 grading threads)" if mode == "embedded" else "celery (PG + Redis, 2 workers)"
        with tempfile.TemporaryDirectory() as tmp_name, database(backend, Path(tmp_name)) as url:
            classes = prepare(url, {"baseline": args.baseline, "class": args.students})
            with stack(mode, url, Path(tmp_name), env=STACK_ENV) as port:
                for name, emails in classes.items():  # the baseline first, on a quiet stack; same window
                    started = time.perf_counter()
                    tally = asyncio.run(run_class(port, emails, args.window, args.q5_every, args.seed, args.login))
                    wall = time.perf_counter() - started
                    checked = verify(url, tally, fill_in_scores)
                    failures += report(f"{label}, {name}", len(emails), tally, checked, wall)
            if failures:  # the servers' logs outlive the temporary directory, to read what failed
                kept = Path(tempfile.mkdtemp(prefix="bench_class_load_"))
                shutil.copy(Path(tmp_name) / f"{mode}.log", kept)
                print(f"  the {mode} stack's log: {kept / f'{mode}.log'}")
    if failures:
        print(f"\n{len(failures)} failure(s)", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
