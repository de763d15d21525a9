"""Fault: PostgreSQL unavailable for 10 s while submissions are posted and graded. `autograder serve` (embedded
workers) reaches the shared PostgreSQL through a TCP relay of this test (fault_stack.TcpProxy), which is cut: open
connections reset, new ones refused, as when the server stops, without stopping the server others use.

During the outage every request is answered quickly (no hang) with a 503, Retry-After and the one error shape, never
a 500; nothing is half-written, so the client's retries afterwards (same Idempotency-Key) are stored once each. Every
submission accepted before the outage, including the ones queued and the one being graded when it began, is graded
after it, with one set of check rows each."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url

from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.submissions.models import Submission
from app.users.models import Role
from tests.app.fault_stack import Process, TcpProxy, all_final, assert_graded_once, free_port, healthz, wait_until
from tests.conftest import FIXTURE_SETS, fresh_postgres_database

OUTAGE_S = 10
# Each call of add sleeps, so a grading lasts a few seconds: one is running and others queued when the cut comes.
SLOW_SOURCE = "import time\n\ndef add(a, b):\n    time.sleep(0.5)\n    return a + b\n"
ANSWERS = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}}
CODE = {"problem_set": "codeset", "problem": "c1", "code": SLOW_SOURCE}


@pytest.mark.slow
@pytest.mark.postgres
def test_database_outage_is_503_then_everything_is_graded_once(tmp_path: Path) -> None:
    pytest.importorskip("graders.code.runner")
    with fresh_postgres_database("autograder_dbdown") as database_url:
        upgrade(database_url)
        engine = make_engine(database_url)  # the test's own view of the database, not through the relay
        sessions = make_session_factory(engine)
        with sessions() as session:
            course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
            course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
            user, _ = accounts.create_user(session, email="s@example.com", role=Role.STUDENT)
            _, token = accounts.create_token(session, user=user, name="outage")
            session.commit()
        upstream = make_url(database_url)
        proxy = TcpProxy(upstream.host or "127.0.0.1", upstream.port or 5432)
        proxy.start()
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = {
            "AUTOGRADER_DATABASE_URL": upstream.set(port=proxy.port).render_as_string(hide_password=False),
            "AUTOGRADER_SECRET_KEY": "k" * 40,
            "AUTOGRADER_DATA_DIR": str(tmp_path / "data"),
            "AUTOGRADER_WORKERS": "1",
            "AUTOGRADER_LOAD_PROBLEMS_ON_START": "false",
            "AUTOGRADER_PREWARM_SANDBOX": "false",
            "AUTOGRADER_RATE_LIMITS": "false",
        }
        server = Process(["serve", "--port", str(port)], env, tmp_path / "serve.log")
        headers = {"Authorization": f"Bearer {token}"}
        try:
            wait_until("serve answers", lambda: healthz(base)["status"] == "ok", bound_s=180)
            with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
                before: list[int] = []
                for body in (CODE, ANSWERS, CODE, ANSWERS, CODE, CODE):
                    resp = client.post("/api/v1/submissions", json=body)
                    assert resp.status_code in (200, 202), resp.text
                    before.append(resp.json()["id"])
                code_ids = [before[i] for i in (0, 2, 4, 5)]

                # Cut while the worker is grading a code submission and the others wait in the queue.
                def grading() -> bool:
                    now = [client.get(f"/api/v1/submissions/{i}").json()["status"] for i in code_ids]
                    return "running" in now and "queued" in now

                wait_until("a code submission is being graded, others queued", grading, bound_s=120)
                proxy.cut()
                refused: list[tuple[str, dict[str, object]]] = []
                started = time.monotonic()
                while time.monotonic() - started < OUTAGE_S:
                    for body in (ANSWERS, CODE):
                        key = uuid.uuid4().hex
                        # A hang would raise here (the client's timeout); the answer must come well before it.
                        resp = client.post("/api/v1/submissions", json=body, headers={"Idempotency-Key": key},
                                           timeout=30)  # fmt: skip
                        assert resp.status_code == 503, resp.text
                        assert int(resp.headers["Retry-After"]) > 0
                        error = resp.json()
                        assert error["detail"][0]["type"] == "service_unavailable", error
                        assert "database" in error["detail"][0]["msg"] and error["request_id"], error
                        refused.append((key, body))
                    read = client.get(f"/api/v1/submissions/{before[1]}", timeout=30)
                    assert read.status_code == 503, read.text
                    time.sleep(0.5)
                proxy.restore()

                # The client's retries: each refused post stored once, under its key.
                def retried() -> bool:
                    for key, body in list(refused):
                        resp = client.post("/api/v1/submissions", json=body, headers={"Idempotency-Key": key})
                        assert resp.status_code in (200, 202, 503), resp.text
                        if resp.status_code != 503:
                            after.append(resp.json()["id"])
                            refused.remove((key, body))
                    return not refused

                after: list[int] = []
                count = len(refused)
                wait_until("the refused posts are stored when retried", retried, bound_s=120, every_s=1)
                assert len(after) == len(set(after)) == count
            ids = before + after
            wait_until("everything is graded", all_final(sessions, ids), bound_s=300, every_s=0.5)
            assert_graded_once(sessions, ids, checks_each=2)  # c1 and t1 have two checks each
            with sessions() as session:
                stored = session.scalar(select(func.count()).select_from(Submission))
                assert stored == len(ids)  # nothing half-written by the refused posts
        finally:
            server.stop()
            proxy.cut()
            engine.dispose()
        log = server.text()
        assert '"status":500' not in log and "internal_error" not in log, log[-4000:]
        # The workers and the webhook sender say once that the database is gone, with no traceback per try.
        assert "Traceback" not in log, log[-4000:]
