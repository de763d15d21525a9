"""`autograder worker` runs below the API's CPU priority (app/worker/priority.py): its nice value, and its session's
autogroup when it leads that session alone. Each case in a fresh process, since a priority once lowered stays."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.config import REPO_ROOT

AUTOGROUPS = Path("/proc/sys/kernel/sched_autogroup_enabled")
autogroups_on = pytest.mark.skipif(
    not AUTOGROUPS.exists() or AUTOGROUPS.read_text().strip() != "1", reason="the kernel's autogroups are off"
)

PROBE = """
import os
from app.worker.priority import lower_priority
lowered = lower_priority({nice})
print(lowered.nice, lowered.autogroup_nice, os.getpriority(os.PRIO_PROCESS, 0),
      (open("/proc/self/autogroup").read().split() or ["-"])[-1] if os.path.exists("/proc/self/autogroup") else "-")
"""


def _own_autogroup_nice() -> str:
    """This process's autogroup nice value, or "-" when the file is empty: a process of the session that PID 1 began
    (never a setsid since boot, as in a container's init session, where CI runs) has the kernel's default group,
    which prints nothing. A new session always gets a group of its own."""
    return (Path("/proc/self/autogroup").read_text().split() or ["-"])[-1]


def _probe(nice: int, *, new_session: bool, prefix: tuple[str, ...] = ()) -> list[str]:
    out = subprocess.run(
        [*prefix, sys.executable, "-c", PROBE.format(nice=nice)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        start_new_session=new_session,
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()


@autogroups_on
def test_a_worker_leading_its_session_lowers_its_nice_and_its_autogroup() -> None:
    assert _probe(10, new_session=True) == ["10", "10", "10", "10"]


@autogroups_on
def test_a_worker_sharing_its_session_leaves_the_autogroup_alone() -> None:
    # Started from a shell beside `serve`: the group may hold the API, so only the worker's own nice value changes.
    before = _own_autogroup_nice()
    assert _probe(10, new_session=False) == ["10", "None", "10", before]


def test_a_lower_priority_set_outside_is_kept() -> None:
    # `nice -n 15 autograder worker` (or a service's Nice=15) already runs lower: never raised back to 10.
    assert _probe(10, new_session=True, prefix=("nice", "-n", "15"))[:3] == ["15", "None", "15"]


def test_nice_zero_changes_nothing() -> None:
    assert _probe(0, new_session=True)[:3] == ["0", "None", "0"]


def test_the_worker_command_runs_at_the_configured_priority(tmp_path: Path) -> None:
    """The polling worker (no broker, a SQLite file), started as a service starts it: in a session of its own."""
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "AUTOGRADER_DATABASE_URL": f"sqlite:///{tmp_path / 'w.db'}",
        "AUTOGRADER_DATA_DIR": str(tmp_path / "data"),
        "AUTOGRADER_SECRET_KEY": "k" * 40,
        "AUTOGRADER_PREWARM_SANDBOX": "false",
        "AUTOGRADER_WORKER_NICE": "7",
        "AUTOGRADER_LOG_FORMAT": "text",
    }
    env.pop("AUTOGRADER_BROKER_URL", None)
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "app.cli.main", "worker", "--concurrency", "1"],
            cwd=REPO_ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 300  # bounds a worker that hangs at start; measures nothing
        while "slot(s) polling" not in log.read_text(errors="replace"):  # up, however long that takes here
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, "the worker did not start: " + log.read_text(errors="replace")
            time.sleep(0.2)
        assert "worker CPU priority: nice 7" in log.read_text()
        stat = Path(f"/proc/{proc.pid}/stat").read_text().rpartition(")")[2].split()
        assert int(stat[16]) == 7  # the nice field of proc(5)'s stat, counted after the command name
        if AUTOGROUPS.exists() and AUTOGROUPS.read_text().strip() == "1":
            assert Path(f"/proc/{proc.pid}/autogroup").read_text().split()[-1] == "7"
            assert "autogroup nice 7" in log.read_text()
    finally:
        proc.terminate()
        proc.wait(60)
