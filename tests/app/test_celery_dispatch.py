"""Scale-out: the API enqueues to Celery on the real Redis; a separate `autograder worker` process grades."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from app.config import Settings
from app.db import make_engine, make_session_factory
from app.main import create_app
from app.problemsets import service as sets
from app.users import service as users
from app.users.models import Role
from tests.conftest import FIXTURE_SETS, REDIS_URL, REPO, service_missing


@pytest.mark.redis
@pytest.mark.postgres
def test_submission_graded_by_celery_worker(tmp_path: Path, postgres_database: str) -> None:
    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except Exception as exc:
        service_missing("Redis", exc)
    redis.Redis.from_url(REDIS_URL).flushdb()
    from tests.conftest import _truncate_postgres

    _truncate_postgres(postgres_database)
    # Fill-in answers are graded by the API itself by default (app/worker/inline.py); off, so the worker grades.
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=postgres_database,
        broker_url=REDIS_URL,
        secret_key="k" * 40,
        grade_answers_inline=False,
    )
    sessions = make_session_factory(make_engine(postgres_database))
    with sessions() as session:
        sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        user, _ = users.create_user(session, email="ci@example.com", role=Role.STUDENT)
        _, token = users.create_token(session, user=user, name="ci")
        session.commit()
    env = {
        **os.environ,
        "AUTOGRADER_DATA_DIR": str(tmp_path / "worker-data"),
        "AUTOGRADER_DATABASE_URL": postgres_database,
        "AUTOGRADER_BROKER_URL": REDIS_URL,
        "AUTOGRADER_SECRET_KEY": "k" * 40,
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "worker", "--concurrency", "1"],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with TestClient(create_app(settings)) as client:
            assert client.app.state.pool is None  # no embedded workers: grading must come from the Celery worker
            resp = client.post(
                "/api/v1/submissions",
                params={"wait": 60},
                json={"problem_set": "basic", "problem": "t1", "answers": {"b1": "编码器", "b2": "32"}},
                headers={"Authorization": f"Bearer {token}"},
            )
        body = resp.json()
        assert body["status"] == "graded", body
        assert body["final_score"] == body["max_score"] == 3.0
        assert body["source"] == "ci"
    finally:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(30)


SLOW_ADD = "import time\n\ndef add(a, b):\n    time.sleep(2)\n    return a + b\n"  # two checks: about 4 s


@pytest.mark.redis
@pytest.mark.postgres
def test_a_celery_worker_killed_mid_job_has_its_job_taken_over_before_the_lease(  # type: ignore[no-untyped-def]
    tmp_path: Path, postgres_database: str
) -> None:
    import time

    from sqlalchemy import func, select

    from app.submissions.models import Grade, Status, Submission
    from tests.conftest import _truncate_postgres

    try:
        redis.Redis.from_url(REDIS_URL).ping()
    except Exception as exc:
        service_missing("Redis", exc)
    redis.Redis.from_url(REDIS_URL).flushdb()
    _truncate_postgres(postgres_database)
    lease_s = 600.0  # the lease alone would give the job back only after ten minutes
    settings = Settings(data_dir=tmp_path / "data", database_url=postgres_database, broker_url=REDIS_URL,
                        secret_key="k" * 40, grading_lease_s=lease_s)  # fmt: skip
    sessions = make_session_factory(make_engine(postgres_database))
    with sessions() as session:
        sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        user, _ = users.create_user(session, email="ci@example.com", role=Role.STUDENT)
        _, token = users.create_token(session, user=user, name="ci")
        session.commit()
    workers = []
    for i in range(2):
        env = {**os.environ, "AUTOGRADER_DATA_DIR": str(tmp_path / f"worker{i}"),
               "AUTOGRADER_DATABASE_URL": postgres_database, "AUTOGRADER_BROKER_URL": REDIS_URL,
               "AUTOGRADER_SECRET_KEY": "k" * 40, "AUTOGRADER_GRADING_LEASE_S": str(lease_s)}  # fmt: skip
        workers.append(subprocess.Popen([sys.executable, "-m", "app.cli.main", "worker", "--concurrency", "1"],
                                        cwd=REPO, env=env, start_new_session=True,
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))  # fmt: skip

    def row(sub_id: int) -> Submission:
        with sessions() as session:
            sub = session.get(Submission, sub_id)
            assert sub is not None
            session.expunge(sub)
            return sub

    def until(predicate, limit_s: float) -> Submission:  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + limit_s
        while True:
            sub = row(sub_id)
            if predicate(sub) or time.monotonic() > deadline:
                return sub
            time.sleep(0.2)

    try:
        with TestClient(create_app(settings)) as client:
            body = {"problem_set": "codeset", "problem": "c1", "code": SLOW_ADD}
            resp = client.post("/api/v1/submissions", json=body, headers={"Authorization": f"Bearer {token}"})
        sub_id = resp.json()["id"]
        running = until(lambda s: s.status == Status.RUNNING, 120)
        assert running.status == Status.RUNNING, running.status
        holder_pid = int((running.claimed_by or "").split(":")[1])
        victim = next(w for w in workers if w.pid == holder_pid)
        os.killpg(victim.pid, signal.SIGKILL)  # mid-grading, with its sandbox
        victim.wait(30)
        # Well before the lease: the other worker's sweeper finds the dead holder and the job is graded again.
        done = until(lambda s: s.status in (Status.GRADED, Status.ERROR), 120)
        assert done.status == Status.GRADED, (done.status, done.error)
        survivor = next(w for w in workers if w is not victim)
        assert int((done.claimed_by or "").split(":")[1]) == survivor.pid
        assert done.grading_attempts == 1  # the takeover counted as an attempt
        with sessions() as session:
            assert session.scalar(select(func.count()).where(Grade.submission_id == sub_id)) == 1
            grade = session.scalar(select(Grade).where(Grade.submission_id == sub_id))
            assert grade is not None and grade.auto_score == grade.max_score
    finally:
        for worker in workers:
            if worker.poll() is None:
                os.killpg(worker.pid, signal.SIGTERM)
                worker.wait(30)
