"""A worker killed mid-grading loses nothing: after a restart the submission is graded."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.config import Settings
from app.courses import accounts, course_sets
from app.courses.access import access_for
from app.db import make_engine, make_session_factory
from app.submissions import service as submissions
from app.submissions.models import Status, Submission
from app.users.models import Role
from tests.conftest import FIXTURE_SETS, REPO

SLOW_SOURCE = "import time\n\ndef add(a, b):\n    time.sleep(2)\n    return a + b\n"


def start_worker(settings: Settings) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "AUTOGRADER_DATA_DIR": str(settings.data_dir),
        "AUTOGRADER_DATABASE_URL": settings.resolved_database_url,
        "AUTOGRADER_SECRET_KEY": "k" * 40,
        "AUTOGRADER_WORKERS": "1",
    }
    # A new session, so the kill below takes the worker and every process it started (the sandbox too).
    return subprocess.Popen(
        [sys.executable, "-m", "app.cli.main", "worker"],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def wait_for(sessions, sub_id: int, statuses: set[str], bound_s: float = 180) -> str:  # type: ignore[no-untyped-def]
    """Poll until the submission reaches a status; the bound only stops a hung test, it measures nothing."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        with sessions() as session:
            status = session.get(Submission, sub_id).status
        if status in statuses:
            return status
        time.sleep(0.1)
    pytest.fail(f"submission {sub_id} never reached {statuses}")


@pytest.mark.slow
def test_killed_worker_resumes_after_restart(tmp_path: Path) -> None:
    pytest.importorskip("graders.code.runner")
    settings = Settings(data_dir=tmp_path / "data", secret_key="k" * 40, workers=1)
    from app.migrate import upgrade

    settings.data_dir.mkdir(parents=True)
    upgrade(settings.resolved_database_url)
    sessions = make_session_factory(make_engine(settings.resolved_database_url))
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        user, _ = accounts.create_user(session, email="s@example.com", role=Role.STUDENT)
        session.commit()
        sub, _ = submissions.create(
            session,
            settings=settings,
            user=user,
            access=access_for(session, user),
            problem_set="codeset",
            problem_id="c1",
            code=SLOW_SOURCE,
        )
        sub_id = sub.id

    first = start_worker(settings)
    try:
        wait_for(sessions, sub_id, {Status.RUNNING})
        os.killpg(first.pid, signal.SIGKILL)  # mid-grading: the student's call sleeps
        first.wait()
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    with sessions() as session:
        assert session.get(Submission, sub_id).status == Status.RUNNING  # held by a dead worker

    second = start_worker(settings)
    try:
        assert wait_for(sessions, sub_id, {Status.GRADED, Status.ERROR}) == Status.GRADED
    finally:
        os.killpg(second.pid, signal.SIGTERM)
        second.wait(30)
    with sessions() as session:
        graded = session.get(Submission, sub_id)
        assert graded.grade is not None and graded.grade.auto_score == graded.grade.max_score == 3.0
        assert [c.name for c in graded.checks] == ["adds_numbers", "adds_tensors"]
