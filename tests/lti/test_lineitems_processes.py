"""One line item per resource link with two real processes: two `autograder worker`s (each runs a passback sender,
as in the documented scale-out) share one database (SQLite file or PostgreSQL) and post the scores of one link
launched without an AGS line item to the test LMS on 127.0.0.1 at the same time. The LMS ends with one line item
holding both students' scores.

"At the same time" is made certain, not left to luck: the LMS holds every line-item lookup at a gate, so the worker
that took the link's claim waits inside its lookup while the other worker, holding the other student's score, must
meet the claim in the database (it defers its row without asking the LMS anything). Before the fix both made a
line item (3 of 3 trials in the report of issue 24).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select, update

from app.config import Settings
from app.db import utcnow
from app.lti import lineitems
from app.lti.models import LtiLineItem, LtiPassback, LtiResourceLink
from tests.conftest import REPO
from tests.lti.test_lineitems import _course_and_two_students

BOUND_S = 120  # only stops a hung test; nothing is measured


def _until(what: str, ready: Callable[[], bool], log_dir: Path) -> None:
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.05)
    pytest.fail(f"never: {what}; the workers wrote:\n" + "\n---\n".join(_logs(log_dir)))


@contextmanager
def _workers(settings: Settings, log_dir: Path, count: int = 2) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` `autograder worker` processes on the test's database and data dir (its LTI tool key)."""
    env = {
        **os.environ,
        "AUTOGRADER_DATA_DIR": str(settings.data_dir),
        "AUTOGRADER_DATABASE_URL": settings.resolved_database_url,
        "AUTOGRADER_SECRET_KEY": settings.secret_key.get_secret_value(),
        "AUTOGRADER_PUBLIC_URL": settings.public_url,
        "AUTOGRADER_WORKERS": "1",
        "AUTOGRADER_PREWARM_SANDBOX": "false",
        "AUTOGRADER_WEBHOOK_POLL_S": "0.1",  # the senders' poll interval: each looks often
        "AUTOGRADER_LTI_PASSBACK_RETRY_DELAYS_S": "[0, 0, 0]",
        "AUTOGRADER_LOG_FORMAT": "text",
        "PYTHONUNBUFFERED": "1",  # the started line reaches the log file at once
    }
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for n in range(count):
            out = (log_dir / f"worker-{n}.log").open("wb")
            # A session of its own: the stop below reaches the worker and anything it started, and nothing else.
            procs.append(subprocess.Popen([sys.executable, "-m", "app.cli.main", "worker"], cwd=REPO, env=env,
                                          start_new_session=True, stdout=out, stderr=subprocess.STDOUT))  # fmt: skip
            out.close()
        yield procs
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _logs(log_dir: Path) -> list[str]:
    return [path.read_text(errors="replace") for path in sorted(log_dir.glob("worker-*.log"))]


def _started(log_dir: Path, count: int) -> bool:
    # `autograder worker` prints "worker: 1 slot(s) polling ..." once its services (the passback sender) run.
    logs = _logs(log_dir)
    return len(logs) == count and all("polling" in log for log in logs)


def test_two_worker_processes_make_one_line_item_for_one_link(  # type: ignore[no-untyped-def]
    lti_client, lti_settings, platform, sessions, basic_set, tmp_path
) -> None:
    _course_and_two_students(lti_client, platform)
    # Both scores wait (not due) until both workers run, so neither worker can post both before the other starts.
    later = utcnow() + timedelta(days=1)
    with sessions() as s:
        s.execute(update(LtiPassback).values(next_attempt_at=later))
        s.commit()
        assert [r.status for r in s.scalars(select(LtiPassback))] == ["pending", "pending"]
    platform.container_gate = threading.Event()
    try:
        with _workers(lti_settings, tmp_path) as procs:
            _until("both workers started", lambda: _started(tmp_path, len(procs)), tmp_path)
            assert all(p.poll() is None for p in procs)
            due = utcnow()
            with sessions() as s:
                s.execute(update(LtiPassback).values(next_attempt_at=due))
                s.commit()
            # One worker takes the link's claim and waits inside its lookup at the LMS ...
            assert platform.container_reached.wait(BOUND_S)

            def deferred() -> bool:
                # ... and the other student's row is put back by a second (a claim moves it 120 s ahead; only
                # meeting the link's claim moves it by WAIT_S), with no attempt spent: the other worker met the
                # claim. The first worker is blocked in its lookup, so it cannot be the one.
                with sessions() as s:
                    rows = list(s.scalars(select(LtiPassback)))
                window = utcnow() + timedelta(seconds=30)
                return any(r.attempts == 0 and due < r.next_attempt_at < window for r in rows)

            # Or, were the claim broken, the other worker reaching the LMS's lookup too: the test then goes on to
            # count the line items the two made, rather than waiting here for a deferral that never comes.
            _until("the second worker met the first one's claim", lambda: deferred() or platform.container_gets > 1,
                   tmp_path)  # fmt: skip
            platform.container_gate.set()
            _until("both scores posted", lambda: sum(len(v) for v in platform.scores.values()) >= 2, tmp_path)
            _until("both rows sent", lambda: _statuses(sessions) == ["sent", "sent"], tmp_path)
            assert all(p.poll() is None for p in procs)  # neither worker died on the way
    finally:
        platform.container_gate.set()
        platform.container_gate = None
    assert platform.lineitem_posts == 1
    [(item_id, item)] = platform.lineitems.items()
    assert item["resourceLinkId"] == "rl-1" and item["tag"] == lineitems.TAG
    assert sorted(score["userId"] for score in platform.scores[item_id]) == ["s-1", "s-2"]
    with sessions() as s:
        [row] = s.scalars(select(LtiLineItem))
        assert row.lineitem_url == item["id"] and row.claimed_until is None
        assert s.scalar(select(LtiResourceLink.lineitem_url)) == item["id"]


def _statuses(sessions) -> list[str]:  # type: ignore[no-untyped-def]
    with sessions() as s:
        return [r.status for r in s.scalars(select(LtiPassback).order_by(LtiPassback.id))]
