"""Fault: a worker SIGKILLed mid-grading, with two real `autograder worker` processes: the polling pool on SQLite and
Celery on PostgreSQL + Redis. The survivor takes the job over within seconds (its orphan sweeper sees the dead pid)
rather than after the lease (600 s here), grades it exactly once, and nothing the dead worker started survives it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from app.submissions.models import Status, Submission
from tests.app.fault_stack import (
    CodesetDatabase,
    PrivateRedis,
    Process,
    assert_graded_once,
    descendants,
    statuses,
    survivors,
    wait_until,
)
from tests.conftest import fresh_postgres_database

# Each call of the student's add sleeps: the grading lasts several seconds, so the kill lands mid-grading.
SLOW_SOURCE = "import time\n\ndef add(a, b):\n    time.sleep(2)\n    return a + b\n"
LEASE_S = 600


@contextmanager
def backend(mode: str, tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """The database URL and the environment of the workers for one mode."""
    if mode == "embedded":
        yield f"sqlite:///{tmp_path / 'autograder.db'}", {}
        return
    broker = PrivateRedis(tmp_path)
    broker.start()
    try:
        with fresh_postgres_database("autograder_kill") as url:
            yield url, {"AUTOGRADER_BROKER_URL": broker.url}
    finally:
        broker.stop()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["embedded", pytest.param("celery", marks=[pytest.mark.redis, pytest.mark.postgres])])
def test_a_worker_killed_mid_grading_hands_its_job_over_within_seconds(mode: str, tmp_path: Path) -> None:
    pytest.importorskip("graders.code.runner")
    with backend(mode, tmp_path) as (database_url, extra_env):
        db = CodesetDatabase.create(database_url, tmp_path)
        sessions, settings = db.sessions, db.settings
        env = db.worker_env(LEASE_S, **extra_env)
        workers = [
            Process(["worker"], {**env, "AUTOGRADER_DATA_DIR": str(tmp_path / f"w{i}")}, tmp_path / f"worker{i}.log")
            for i in range(2)
        ]
        try:
            sub_id = db.submit_c1(SLOW_SOURCE)
            if mode == "celery":  # as the API does; the outbox is tested with the broker outage
                from app.worker.celery_app import make_enqueue

                make_enqueue(settings.model_copy(update={"broker_url": extra_env["AUTOGRADER_BROKER_URL"]}))(sub_id)

            def claimed_by() -> str | None:
                with sessions() as session:
                    row = session.get(Submission, sub_id)
                    return row.claimed_by if row is not None and row.status == Status.RUNNING else None

            # Mid-grading: claimed, and the sandbox child is running the student's (sleeping) code.
            wait_until("a worker is grading", lambda: claimed_by() is not None, bound_s=240)
            holder = int((claimed_by() or "").split(":")[1])
            victim = next(w for w in workers if w.pid == holder)
            survivor = next(w for w in workers if w.pid != holder)
            wait_until("the victim's sandbox is up", lambda: bool(descendants(victim.pid)), bound_s=240)
            time.sleep(1.5)
            tree = descendants(victim.pid)
            assert statuses(sessions, [sub_id]) == {sub_id: Status.RUNNING}
            victim.kill()

            def taken_over() -> bool:
                holder_now = claimed_by()
                return holder_now is not None and holder_now.split(":")[1] == str(survivor.pid)

            handed = wait_until("the survivor claims the job", taken_over, bound_s=LEASE_S / 4, every_s=0.05)
            took = wait_until("the survivor grades the job", lambda: statuses(sessions, [sub_id])[sub_id] in
                              (Status.GRADED, Status.ERROR), bound_s=LEASE_S / 4)  # fmt: skip
            print(f"\n{mode}: job of the killed worker claimed by the survivor {handed:.1f} s after the kill, graded "
                  f"{handed + took:.1f} s after it (lease {LEASE_S} s)")  # fmt: skip
            assert_graded_once(sessions, [sub_id], checks_each=2)
            with sessions() as session:
                graded = session.get(Submission, sub_id)
                assert graded is not None and graded.grade is not None
                assert graded.grade.auto_score == graded.grade.max_score == 3.0
                assert graded.grading_attempts == 1  # the one takeover
                assert (graded.claimed_by or "").split(":")[1] == str(survivor.pid)
            wait_until("nothing the killed worker started survives it", lambda: not survivors(tree), bound_s=30)
        finally:
            for worker in workers:
                worker.stop()
            db.engine.dispose()
        for worker in workers:
            assert "Traceback" not in worker.text(), worker.text()[-4000:]
