"""Fault: a worker of another host SIGKILLed mid-grading. No process of this host can tell that a process of another
one died (the orphan sweeper only sees its own host's pids), so the job comes back when the dead worker's heartbeat
stops renewing its lease: three beats (AUTOGRADER_GRADING_HEARTBEAT_S, 1 s here), not the 600 s grading lease.

The victim is a real `autograder worker` in a UTS namespace of its own under another host name (what a second
machine looks like in the claims); after the kill a worker of this host is started, as a replacement would be, and
grades the job exactly once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.submissions.models import Status, Submission
from tests.app.fault_stack import (
    CodesetDatabase,
    Process,
    assert_graded_once,
    descendants,
    other_host,
    statuses,
    wait_until,
)

# Each call of the student's add sleeps: the grading outlasts the 3 s lease several times over.
SLOW_SOURCE = "import time\n\ndef add(a, b):\n    time.sleep(3)\n    return a + b\n"
LEASE_S = 600
HEARTBEAT_S = 1.0
OTHER_HOST = "grader-elsewhere"


@pytest.mark.slow
def test_a_worker_of_another_host_killed_mid_grading_loses_its_job_after_three_heartbeats(tmp_path: Path) -> None:
    pytest.importorskip("graders.code.runner")
    prefix = other_host(OTHER_HOST)
    db = CodesetDatabase.create(f"sqlite:///{tmp_path / 'autograder.db'}", tmp_path)
    sessions = db.sessions
    env = db.worker_env(LEASE_S, AUTOGRADER_GRADING_HEARTBEAT_S=str(HEARTBEAT_S))
    victim = Process(["worker"], {**env, "AUTOGRADER_DATA_DIR": str(tmp_path / "w0")}, tmp_path / "victim.log",
                     prefix=prefix)  # fmt: skip
    workers = [victim]
    try:
        sub_id = db.submit_c1(SLOW_SOURCE)

        def held() -> tuple[str | None, float | None]:
            with sessions() as session:
                row = session.get(Submission, sub_id)
                assert row is not None
                if row.status != Status.RUNNING or row.lease_until is None:
                    return None, None
                return row.claimed_by, row.lease_until.timestamp()

        wait_until("the other host's worker is grading", lambda: held()[0] is not None, bound_s=240)
        claimed_by, first_lease = held()
        assert claimed_by is not None and claimed_by.split(":")[:2] == [OTHER_HOST, str(victim.pid)]
        wait_until("its sandbox is up", lambda: bool(descendants(victim.pid)), bound_s=240)
        # Alive, it keeps the job past its lease: the heartbeat renews it every beat.
        assert first_lease is not None
        wait_until("the heartbeat renews the lease", lambda: (held()[1] or 0) > first_lease + HEARTBEAT_S,
                   bound_s=60)  # fmt: skip
        assert held()[0] == claimed_by and statuses(sessions, [sub_id]) == {sub_id: Status.RUNNING}
        victim.kill()
        killed = time.monotonic()

        survivor = Process(["worker"], {**env, "AUTOGRADER_DATA_DIR": str(tmp_path / "w1")}, tmp_path / "survivor.log")
        workers.append(survivor)

        def taken_over() -> bool:
            holder = held()[0]
            return holder is not None and holder.split(":")[1] == str(survivor.pid)

        # The bound is a fraction of the grading lease: an expiry after LEASE_S would fail here.
        wait_until("a worker of this host takes the job over", taken_over, bound_s=LEASE_S / 4, every_s=0.1)
        handed = time.monotonic() - killed
        wait_until("it grades the job", lambda: statuses(sessions, [sub_id])[sub_id] in (Status.GRADED, Status.ERROR),
                   bound_s=LEASE_S / 4)  # fmt: skip
        print(f"\njob of the killed worker of another host taken over {handed:.1f} s after the kill (including the "
              f"replacement's start; lease {3 * HEARTBEAT_S:.0f} s, grading lease {LEASE_S} s)")  # fmt: skip
        assert_graded_once(sessions, [sub_id], checks_each=2)
        with sessions() as session:
            graded = session.get(Submission, sub_id)
            assert graded is not None and graded.grade is not None
            assert graded.grade.auto_score == graded.grade.max_score
            assert graded.grading_attempts == 1  # the one takeover
    finally:
        for worker in workers:
            worker.stop()
        db.engine.dispose()
    for worker in workers[1:]:
        assert "Traceback" not in worker.text(), worker.text()[-4000:]
