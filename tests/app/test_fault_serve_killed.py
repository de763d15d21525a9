"""Fault: `autograder serve` (embedded default, SQLite) SIGKILLed while it grades q5 submissions. The kill hits the
server process only, not its process group, so nothing it started may outlive it by itself: the sandbox (bwrap
with --die-with-parent, the zygote in bwrap's pid namespace, each run in a namespace of its own below it) dies
with it. A restart requeues the interrupted jobs at once and grades every submission exactly once."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.submissions.models import CheckResultRow, Status, Submission
from app.users.models import Role
from tests.app.fault_stack import (
    Process,
    all_final,
    depth_below,
    descendants,
    free_port,
    healthz,
    statuses,
    survivors,
    wait_until,
)
from tests.conftest import REPO

ATTENTION = REPO / "problems" / "attention"
SOLUTION = (ATTENTION / "solutions" / "q5" / "masked_fill.py").read_text()
SUBMISSIONS = 8


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


@pytest.mark.slow
def test_serve_killed_leaves_no_process_and_a_restart_grades_everything_once(tmp_path: Path) -> None:
    pytest.importorskip("graders.code.runner")
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    database_url = f"sqlite:///{data_dir / 'autograder.db'}"
    upgrade(database_url)
    engine = make_engine(database_url)
    sessions = make_session_factory(engine)
    with sessions() as session:
        course_sets.load_dir(session, root=ATTENTION, grader=None)
        user, _ = accounts.create_user(session, email="s@example.com", role=Role.STUDENT)
        _, token = accounts.create_token(session, user=user, name="kill")
        session.commit()
    env = {
        "AUTOGRADER_DATA_DIR": str(data_dir),
        "AUTOGRADER_SECRET_KEY": "k" * 40,
        "AUTOGRADER_LOAD_PROBLEMS_ON_START": "false",
        "AUTOGRADER_WORKERS": "2",
    }
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    first = Process(["serve", "--port", str(port)], env, tmp_path / "serve1.log")
    second: Process | None = None
    try:
        wait_until("serve answers", lambda: healthz(base)["status"] == "ok", bound_s=180)
        body = {"problem_set": "attention", "problem": "q5", "code": SOLUTION}
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
            ids = []
            for _ in range(SUBMISSIONS):
                resp = client.post("/api/v1/submissions", json=body)
                assert resp.status_code == 202, resp.text
                ids.append(resp.json()["id"])

        def grading_in_sandbox() -> bool:
            # serve -> bwrap -> bwrap (pid 1 of the jail) -> zygote -> a run's init or child: student code runs.
            deep = any(depth_below(first.pid, pid) >= 4 for pid in descendants(first.pid))
            return deep and Status.RUNNING in statuses(sessions, ids).values()

        wait_until("serve grades in its sandbox", grading_in_sandbox, bound_s=240, every_s=0.05)
        tree = descendants(first.pid)
        names = sorted(_name(pid) for pid in tree)
        before = statuses(sessions, ids)
        first.kill()  # the server process only: its process group and the sandbox's sessions are left alone
        print(
            f"\nkilled serve with {len(tree)} descendant process(es) {names}; statuses then: {sorted(before.values())}"
        )
        wait_until("no process of the killed server survives", lambda: not survivors(tree), bound_s=30)
        interrupted = [i for i in ids if statuses(sessions, [i])[i] == Status.RUNNING]
        assert interrupted, before  # the kill landed mid-grading

        second = Process(["serve", "--port", str(port)], env, tmp_path / "serve2.log")
        took = wait_until("the restarted server grades everything", all_final(sessions, ids), bound_s=600)
        print(f"restart: {len(interrupted)} interrupted, all {SUBMISSIONS} graded {took:.1f} s after the restart")
        with sessions() as session:
            counts = set()
            for sub_id in ids:
                sub = session.get(Submission, sub_id)
                assert sub is not None and sub.status == Status.GRADED, (sub_id, sub and sub.error)
                assert sub.grade is not None and sub.grade.auto_score == sub.grade.max_score, sub.grade
                assert sub.grading_attempts == (1 if sub_id in interrupted else 0)
                counts.add(
                    session.scalar(
                        select(func.count()).select_from(CheckResultRow).where(CheckResultRow.submission_id == sub_id)
                    )
                )
            assert len(counts) == 1 and counts.pop() > 0  # one set of checks each: none graded twice
        assert "requeued" in second.text()
    finally:
        first.stop()
        if second is not None:
            second.stop()
        engine.dispose()
