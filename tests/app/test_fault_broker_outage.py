"""Fault: the broker down for 20 s in the scale-out mode (PostgreSQL, a private Redis, `autograder serve` and two
`autograder worker` processes). Every post is stored (202) meanwhile, /healthz says the broker is down, the log
has one line for the outage (no traceback per request), and after the broker's return everything is graded,
exactly once, within seconds: the outbox re-sends the queued rows, nothing waits for a lease."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest

from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.submissions.models import Status, Submission
from app.users.models import Role
from tests.app.fault_stack import (
    PrivateRedis,
    Process,
    all_final,
    assert_graded_once,
    free_port,
    healthz,
    statuses,
    wait_until,
)
from tests.conftest import FIXTURE_SETS, fresh_postgres_database

OUTAGE_S = 20
ANSWERS = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}}


@pytest.mark.slow
@pytest.mark.redis
@pytest.mark.postgres
def test_broker_outage_loses_nothing_and_recovers_in_seconds(tmp_path: Path) -> None:
    broker = PrivateRedis(tmp_path)
    with fresh_postgres_database("autograder_outage") as database_url:
        upgrade(database_url)
        engine = make_engine(database_url)
        sessions = make_session_factory(engine)
        with sessions() as session:
            course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
            user, _ = accounts.create_user(session, email="s@example.com", role=Role.STUDENT)
            _, token = accounts.create_token(session, user=user, name="outage")
            session.commit()
        env = {
            "AUTOGRADER_DATABASE_URL": database_url,
            "AUTOGRADER_BROKER_URL": broker.url,
            "AUTOGRADER_SECRET_KEY": "k" * 40,
            "AUTOGRADER_LOAD_PROBLEMS_ON_START": "false",
            "AUTOGRADER_PREWARM_SANDBOX": "false",
            # Answers graded by the API need no broker (app/worker/inline.py): off, so that these wait in the outbox.
            "AUTOGRADER_GRADE_ANSWERS_INLINE": "false",
        }
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        headers = {"Authorization": f"Bearer {token}"}
        broker.start()
        worker_args = ["worker", "--concurrency", "1"]
        procs = [
            Process(worker_args, {**env, "AUTOGRADER_DATA_DIR": str(tmp_path / f"w{i}")}, tmp_path / f"worker{i}.log")
            for i in range(2)
        ]
        server = Process(["serve", "--port", str(port)], {**env, "AUTOGRADER_DATA_DIR": str(tmp_path / "api")},
                         tmp_path / "serve.log")  # fmt: skip
        procs.append(server)
        try:
            wait_until("serve answers with the broker up", lambda: healthz(base).get("broker") == "up", bound_s=180)
            with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
                # The stack works before the fault: graded through the broker.
                warm = client.post("/api/v1/submissions", json=ANSWERS, params={"wait": 60}).json()
                assert warm["status"] == "graded", warm

                broker.stop()
                stopped = time.monotonic()
                ids, slowest = [], 0.0
                for _ in range(20):
                    start = time.monotonic()
                    resp = client.post("/api/v1/submissions", json=ANSWERS)
                    slowest = max(slowest, time.monotonic() - start)
                    assert resp.status_code == 202, resp.text
                    ids.append(resp.json()["id"])
                health = healthz(base)
                assert health == {**health, "status": "degraded", "broker": "down"}, health
                time.sleep(max(0.0, OUTAGE_S - (time.monotonic() - stopped)))
                # Nothing could have reached a worker: the outage was real.
                assert set(statuses(sessions, ids).values()) == {Status.QUEUED}

                broker.start()
                took = wait_until("every submission graded after the broker's return", all_final(sessions, ids),
                                  bound_s=180)  # fmt: skip
                print(f"\nbroker down {OUTAGE_S} s; slowest post meanwhile {slowest:.2f} s; "
                      f"all 20 graded {took:.1f} s after its return")  # fmt: skip
                assert_graded_once(sessions, ids, checks_each=2)
                with sessions() as session:
                    assert all(session.get(Submission, i).grading_attempts == 0 for i in ids)  # type: ignore[union-attr]
                wait_until("healthz says the broker is up again", lambda: healthz(base)["status"] == "ok")
        finally:
            for proc in procs:
                proc.stop()
            broker.stop()
            engine.dispose()
        log = server.text()
        assert "Traceback" not in log, log[-4000:]
        assert log.count("broker unreachable") == 1, log[-4000:]
        assert log.count("broker is back") == 1, log[-4000:]
        assert "could not dispatch" not in log
