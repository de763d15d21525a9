"""Sealed (after_due) results stay sealed everywhere; internal grading failures are retried, never scored."""

from __future__ import annotations

import shutil
import time
from datetime import timedelta
from pathlib import Path

from sqlalchemy import update

from app.courses.course_sets import load_dir
from app.db import utcnow
from app.problemsets.models import ProblemSetVersion
from app.submissions.models import CheckResultRow, Status, Submission
from tests.app.conftest import submit_as
from tests.conftest import FIXTURE_SETS


def wait_graded(client, account, sub_id: int) -> dict:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + 60  # bounds a hung test; measures nothing
    while time.monotonic() < deadline:
        body = client.get(f"/api/v1/submissions/{sub_id}", headers=account.headers).json()
        if body["status"] in ("graded", "error"):
            return body
        time.sleep(0.05)
    raise AssertionError("never graded")


def basic_due_in_future(tmp_path: Path, naive: bool = False) -> Path:
    root = tmp_path / "basic"
    shutil.copytree(FIXTURE_SETS / "basic", root)
    due = utcnow() + timedelta(days=3)
    stamp = due.strftime("%Y-%m-%dT%H:%M:%S") + ("" if naive else "Z")
    text = (root / "problemset.yaml").read_text()
    (root / "problemset.yaml").write_text(text.replace("show_explanations:", f"due_at: {stamp}\nshow_explanations:"))
    return root


def test_after_due_results_are_sealed_in_the_view_and_the_list(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    with sessions() as session:
        load_dir(session, root=basic_due_in_future(tmp_path), grader=None)
        session.commit()
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder", "b2": "32"}}
    sub_id = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers).json()["id"]
    wait_graded(client, accounts["alice"], sub_id)
    with sessions() as session:  # an instructor marked part b2's check "after_due"
        session.execute(
            update(CheckResultRow)
            .where(CheckResultRow.submission_id == sub_id, CheckResultRow.name == "b2")
            .values(visibility="after_due")
        )
        session.commit()
    view = client.get(f"/api/v1/submissions/{sub_id}", headers=accounts["alice"].headers).json()
    sealed = next(c for c in view["checks"] if c["name"] == "b2")
    assert sealed["passed"] is None and sealed["score"] is None and view["sealed_checks"] == 1
    assert view["verdict"] is None and view["final_score"] == 1.0
    row = client.get("/api/v1/submissions", headers=accounts["alice"].headers).json()[0]
    assert row["final_score"] == 1.0 and row["verdict"] is None
    staff = client.get("/api/v1/submissions", headers=accounts["instructor"].headers).json()[0]
    assert staff["final_score"] == 3.0 and staff["verdict"] == "accepted"


def test_naive_due_date_is_read_as_utc(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    with sessions() as session:
        load_dir(session, root=basic_due_in_future(tmp_path, naive=True), grader=None)
        session.commit()
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    resp = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers, params={"wait": 10})
    assert resp.status_code == 202 and resp.json()["final_score"] == 2.0


def test_naive_token_expiry_is_read_as_utc(client, accounts):  # type: ignore[no-untyped-def]
    client.post("/api/v1/auth/login", json={"email": accounts["alice"].email, "password": accounts["alice"].password})
    resp = client.post("/api/v1/tokens", json={"name": "x", "expires_at": "2099-01-01T00:00:00"})
    assert resp.status_code == 201 and resp.json()["expires_at"].startswith("2099-01-01T00:00:00")


def test_damaged_cache_folder_is_rebuilt(client, accounts, basic_set, settings):  # type: ignore[no-untyped-def]
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers, params={"wait": 10})
    from app.problemsets import storage

    storage._cache.clear()
    for folder in (settings.data_dir / "sets").iterdir():
        (folder / "problemset.yaml").unlink()  # damaged on disk; the database still has the archive
    resp = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers, params={"wait": 10})
    assert resp.json()["status"] == "graded" and resp.json()["final_score"] == 2.0


def test_internal_failure_is_retried_then_marked_error_never_scored(accounts, basic_set, settings, sessions):  # type: ignore[no-untyped-def]
    from app.problemsets import storage
    from app.worker.claims import claim_next
    from app.worker.code_grader import LazyCodeGrader
    from app.worker.grading import GradingJob

    with sessions() as session:
        sub_id = submit_as(session, settings, accounts["alice"].id, "basic", "t2", answers={"b1": "B"}).id
        # Then the stored archive is damaged and the worker's unpacked copy is gone: grading cannot run.
        session.execute(update(ProblemSetVersion).values(archive=b"not a tar.gz"))
        session.commit()
    storage._cache.clear()
    shutil.rmtree(settings.data_dir / "sets", ignore_errors=True)
    requeued: list[int] = []
    job = GradingJob(settings, sessions, LazyCodeGrader(settings), requeue=requeued.append)
    attempts = settings.max_grading_attempts
    for attempt in range(1, attempts + 1):
        with sessions() as session:
            assert claim_next(session, worker="w:1:0", lease_s=60, max_attempts=attempts) == sub_id
        job.run(sub_id, "w:1:0")
        with sessions() as session:
            # A retry waits out its delay (app.worker.claims.retry_delay_s); let it pass for the next attempt.
            assert claim_next(session, worker="w:1:0", lease_s=60, max_attempts=attempts) is None
            session.execute(update(Submission).where(Submission.id == sub_id).values(lease_until=None))
            session.commit()
        with sessions() as session:
            sub = session.get(Submission, sub_id)
            assert sub.grading_attempts == attempt and sub.grade is None  # never scored 0
            assert "internal grading error" in (sub.error or "")
    assert sub.status == Status.ERROR
    assert requeued == [sub_id] * (settings.max_grading_attempts - 1)  # Celery is told to retry, then it stops
