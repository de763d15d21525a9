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
from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.main import create_app
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
    # Answers are graded by the API itself (app/worker/inline.py): off here, so that this one goes through Celery.
    settings = Settings(
        data_dir=tmp_path / "data", database_url=postgres_database, broker_url=REDIS_URL, secret_key="k" * 40,
        grade_answers_inline=False,
    )  # fmt: skip
    sessions = make_session_factory(make_engine(postgres_database))
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        user, _ = accounts.create_user(session, email="ci@example.com", role=Role.STUDENT)
        _, token = accounts.create_token(session, user=user, name="ci")
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
