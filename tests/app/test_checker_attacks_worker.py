"""The checker's jail, attacked at grading time in a real `autograder worker`: polling (the database queue, SQLite)
and Celery (the real Redis as broker, the same SQLite file as database).

A hostile instructor's set passes the upload gate honestly: its checks stay quiet for the reference solution and the
mutants and fire only for a student file that arms them (``ARMED``, see tests/sandbox/test_checker_attacks.py). The
worker then grades an armed submission: each attempt (the worker's secret key file, its SQLite file, its environment
through /proc, PostgreSQL and Redis on 127.0.0.1, a write outside, ``import app``, signals to the worker, killing
the checker) must fail, the submission must be graded with only the honest check's point, nothing the attempts
could have read may be stored in its feedback, and the worker must live on and grade the next submission in full.
"""

from __future__ import annotations

import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from app.courses import course_sets
from app.courses.access import access_for
from app.submissions import service as submissions
from app.submissions.models import CheckResultRow, Status, Submission
from tests.app.fault_stack import CodesetDatabase, Process, all_final, wait_until
from tests.conftest import REDIS_URL, service_missing
from tests.sandbox import support
from tests.sandbox.test_checker_attacks import ARMED, ATTACKS, _write_set

RIGHT = "def add(a, b):\n    return a + b\n"
# Beside ATTACKS, the one a worker must survive by more than luck: SIGKILL to the process that grades.
KILLS_THE_WORKER = {"kills_the_worker": "os.kill(SERVICE_PID, signal.SIGKILL)\nreturn 'killed'"}
FULL = 1 + len(ATTACKS) + len(KILLS_THE_WORKER)  # the honest check, and each attack check staying quiet


def _broker() -> str:
    import redis

    try:
        client = redis.Redis.from_url(REDIS_URL)
        client.ping()
    except Exception as exc:
        service_missing("Redis", exc)
    client.flushdb()  # this run's own database (AUTOGRADER_TEST_REDIS_URL)
    return REDIS_URL


def _submit(db: CodesetDatabase, code: str) -> int:
    with db.sessions() as session:
        sub, _ = submissions.create(session, settings=db.settings, user=db.student,
                                    access=access_for(session, db.student), problem_set="hostile",
                                    problem_id="c1", code=code)  # fmt: skip
        return sub.id


def _stored_text(db: CodesetDatabase, sub_id: int) -> str:
    """Everything stored of a grading that a student or staff member could read."""
    with db.sessions() as session:
        sub = session.get(Submission, sub_id)
        assert sub is not None and sub.grade is not None
        rows = session.scalars(select(CheckResultRow).where(CheckResultRow.submission_id == sub_id)).all()
        return "\n".join([sub.grade.message, sub.error or "", *(r.feedback for r in rows)])


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["polling", pytest.param("celery", marks=pytest.mark.redis)])
def test_a_set_armed_at_grading_time_reaches_nothing_of_the_worker(
    mode: str, tmp_path: Path, sqlite_template: Path
) -> None:
    support.require_jail()
    from graders.code.runner import CodeGrader

    db_file = tmp_path / "autograder.db"
    db_file.write_bytes(sqlite_template.read_bytes())
    db = CodesetDatabase.create(f"sqlite:///{db_file}", tmp_path)
    secret = "worker-secret-" + uuid.uuid4().hex
    with sqlite3.connect(db_file) as conn:  # a secret in the database file too, for the attempt that reads it
        conn.execute("create table if not exists planted (secret text)")
        conn.execute("insert into planted values (?)", (secret,))
    worker_data = tmp_path / "worker-data"
    worker_data.mkdir()
    (worker_data / "secret_key").write_text(secret)  # where the app keeps a generated key
    (worker_data / "secret_key").chmod(0o600)
    extra = {"AUTOGRADER_SECRET_KEY": secret, "AUTOGRADER_DATA_DIR": str(worker_data)}
    broker = _broker() if mode == "celery" else None
    if broker is not None:
        extra["AUTOGRADER_BROKER_URL"] = broker
    worker = Process(["worker"], db.worker_env(600, **extra), tmp_path / "worker.log")
    try:
        targets: dict[str, Any] = {
            "SECRET": secret,
            "SECRET_FILE": str(worker_data / "secret_key"),
            "DB_FILE": str(db_file),
            "SERVICE_PID": worker.pid,  # the worker grades in this process (Celery's pool is threads)
            "OUTSIDE": str(tmp_path / "escaped.txt"),
        }
        root = _write_set(tmp_path / "hostile", targets, armed_only=True, extra=KILLS_THE_WORKER)
        # The gate, as an upload or `problems load` runs it: the set passes it, its attacks being quiet there.
        with CodeGrader(support.jail_config(hidden_paths=[tmp_path])) as gate, db.sessions() as session:
            _, report, _ = course_sets.load_dir(session, root=root, grader=gate, max_grading_s=600)
            session.commit()
        assert report.ok and report.points["c1"] == FULL, report.to_dict()

        armed, honest = _submit(db, ARMED), _submit(db, RIGHT)
        if broker is not None:  # as the API does; the outbox is tested with the broker outage
            from app.worker.celery_app import make_enqueue

            enqueue = make_enqueue(db.settings.model_copy(update={"broker_url": broker}))
            enqueue(armed)
            enqueue(honest)
        wait_until("the worker grades both", all_final(db.sessions, [armed, honest]), bound_s=600)

        with db.sessions() as session:
            graded = session.get(Submission, armed)
            assert graded is not None and graded.status == Status.GRADED, graded and graded.error
            assert graded.grade is not None and graded.grade.max_score == FULL
            rows = {r.name: r for r in session.scalars(
                select(CheckResultRow).where(CheckResultRow.submission_id == armed))}  # fmt: skip
            assert rows["adds"].passed
            for attack in [*ATTACKS, *KILLS_THE_WORKER]:
                assert not rows[attack].passed and rows[attack].score == 0, (attack, rows[attack].feedback)
            assert graded.grade.auto_score == 1.0
            after = session.get(Submission, honest)
            assert after is not None and after.grade is not None and after.grade.auto_score == FULL  # grades on
        stored = _stored_text(db, armed)
        assert secret not in stored and "SQLite format" not in stored and "AUTOGRADER_" not in stored, stored
        assert worker.proc.poll() is None, worker.text()[-4000:]  # signalled, SIGKILLed: it lives
        assert not Path(targets["OUTSIDE"]).exists()
        assert not list((root / "checks").glob("*.planted"))
        assert secret not in worker.text()  # nor in its log
    finally:
        worker.stop()
        db.engine.dispose()
