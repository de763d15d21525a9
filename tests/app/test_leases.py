"""Leases that hold: a worker renews its lease while it grades, a takeover counts as an attempt, retries back off,
and a set whose checks could outlive the lease is refused when it is loaded."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.courses import course_sets
from app.db import utcnow
from app.main import create_app
from app.problemsets import service as sets
from app.submissions.models import CheckResultRow, Status, Submission
from app.worker.claims import claim, claimable, retry_delay_s
from app.worker.code_grader import LazyCodeGrader
from app.worker.grading import GradingJob
from graders.grade import validate_set
from graders.problemset.loader import load_problem_set
from tests.app.test_problemset_upload import upload, zip_dir
from tests.conftest import FIXTURE_SETS

SLOW_ADD = "import time\n\ndef add(a, b):\n    time.sleep(1.5)\n    return a + b\n"


def _wait_finished(client, headers, sub_id: int, limit_s: float = 60):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit_s
    while True:
        view = client.get(f"/api/v1/submissions/{sub_id}", headers=headers).json()
        if view["status"] in ("graded", "error") or time.monotonic() > deadline:
            return view
        time.sleep(0.1)


def test_a_grading_longer_than_the_lease_is_not_taken_over(settings, accounts, sessions, caplog):  # type: ignore[no-untyped-def]
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        session.commit()
    # Two workers and a 1 s lease: without renewal the idle worker takes the job over every second, the first
    # worker's result is dropped, and the submission never leaves "running".
    fast_lease = settings.model_copy(update={"workers": 2, "grading_lease_s": 1.0})
    caplog.set_level(logging.WARNING, logger="app.worker.grading")
    with TestClient(create_app(fast_lease)) as client:
        headers = accounts["alice"].headers
        body = {"problem_set": "codeset", "problem": "c1", "code": SLOW_ADD}
        sub_id = client.post("/api/v1/submissions", json=body, headers=headers).json()["id"]
        view = _wait_finished(client, headers, sub_id)
    assert view["status"] == "graded" and view["final_score"] == 3.0, view
    assert not [r for r in caplog.records if "taken over" in r.getMessage()]  # graded once, by one worker
    with sessions() as session:
        sub = session.get(Submission, sub_id)
        assert sub is not None and sub.grading_attempts == 0
        rows = session.scalars(select(CheckResultRow).where(CheckResultRow.submission_id == sub_id)).all()
        assert len(rows) == 2  # graded once


def _running(session, accounts, attempts: int) -> int:  # type: ignore[no-untyped-def]
    version = sets.get_latest(session, "basic")
    sub = Submission(user_id=accounts["alice"].id, problem_set_version_id=version.id, problem_id="t1",
                     payload={"answers": {}}, status=Status.RUNNING, claimed_by="gone:1:0",
                     lease_until=utcnow() - timedelta(seconds=5), grading_attempts=attempts)  # fmt: skip
    session.add(sub)
    session.commit()
    return sub.id


def test_a_takeover_counts_as_an_attempt_and_the_last_one_ends_in_error(accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    with sessions() as session:
        first, last = _running(session, accounts, attempts=0), _running(session, accounts, attempts=2)
        assert claim(session, first, worker="me:2:0", lease_s=60, max_attempts=3)
        assert not claim(session, last, worker="me:2:0", lease_s=60, max_attempts=3)
        session.expire_all()
        taken, ended = session.get(Submission, first), session.get(Submission, last)
        assert taken is not None and ended is not None
        assert (taken.status, taken.claimed_by, taken.grading_attempts) == (Status.RUNNING, "me:2:0", 1)
        assert (ended.status, ended.grading_attempts) == (Status.ERROR, 3)
        assert "outlived its lease" in (ended.error or "")


def test_an_internal_error_is_retried_after_a_growing_delay(settings, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    with sessions() as session:
        sub_id = _running(session, accounts, attempts=0)
        sub = session.get(Submission, sub_id)
        assert sub is not None
        sub.problem_id = "no_such_problem"  # grading it raises: an internal error, not the student's
        sub.status, sub.claimed_by, sub.lease_until = Status.QUEUED, None, None
        session.commit()
    # A job of its own, with no embedded worker beside it that could claim the row first.
    app_job = GradingJob(settings, sessions, LazyCodeGrader(settings))
    with sessions() as session:
        assert claim(session, sub_id, worker="me:3:0", lease_s=60, max_attempts=3)
    app_job.run(sub_id, "me:3:0")
    with sessions() as session:
        sub = session.get(Submission, sub_id)
        assert sub is not None and sub.status == Status.QUEUED and sub.grading_attempts == 1
        assert sub.lease_until is not None
        wait = (sub.lease_until - utcnow()).total_seconds()
        assert 0 < wait <= retry_delay_s(1)
        ready = select(Submission.id).where(Submission.id == sub_id)
        assert session.scalar(ready.where(claimable(utcnow()))) is None  # not before its delay
        later = utcnow() + timedelta(seconds=retry_delay_s(1) + 0.1)
        assert session.scalar(ready.where(claimable(later))) == sub_id
    assert [retry_delay_s(n) for n in (1, 2, 3, 4, 10)] == [1.0, 2.0, 4.0, 8.0, 60.0]


def test_a_set_whose_checks_could_outlive_the_lease_is_refused(client, accounts, settings) -> None:  # type: ignore[no-untyped-def]
    loaded = load_problem_set(FIXTURE_SETS / "codeset")  # c1: 20 s to load + 2 checks x 30 s = 80 s
    # The checks' timeouts are read in the set's jailed checker, which the app's code grader starts; the budget
    # is refused before any gate runs.
    report = validate_set(loaded, code_grader=client.app.state.code_grader, max_grading_s=79)
    assert not report.ok and "up to 80 s" in str(report.errors[0]) and "grading lease" in str(report.errors[0])
    short = settings.model_copy(update={"grading_lease_s": 30.0})
    with TestClient(create_app(short)) as short_client:
        resp = upload(short_client, accounts["instructor"], zip_dir(FIXTURE_SETS / "codeset"))
    assert resp.status_code == 422 and "longer than the 30 s" in resp.text
