"""`autograder db backup` / `db restore` on both backends: a backup taken while the app runs restores into an empty
database, where an old submission is graded again; bad input is refused with a clear message and nothing written."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.config import Settings
from app.db import make_engine, make_session_factory
from app.main import create_app
from app.submissions.models import CheckResultRow, Submission
from tests.conftest import REPO, fresh_postgres_database


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # A writer submits throughout the backup: the per-token rate limit (tests/ops) is not what this is about.
    return settings.model_copy(update={"rate_limits": False})


def cli(database_url: str, data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "AUTOGRADER_DATABASE_URL": database_url,
        "AUTOGRADER_DATA_DIR": str(data_dir),
        "AUTOGRADER_SECRET_KEY": "k" * 40,
    }
    return subprocess.run(
        [sys.executable, "-m", "app.cli.main", "db", *args], cwd=REPO, env=env, capture_output=True, text=True
    )


@contextmanager
def empty_database(settings: Settings, tmp_path: Path) -> Iterator[str]:
    if settings.resolved_database_url.startswith("sqlite"):
        yield f"sqlite:///{tmp_path / 'restored' / 'autograder.db'}"
        return
    with fresh_postgres_database("autograder_restore") as url:
        yield url


def wait_graded(client: TestClient, headers: dict[str, str], sub_id: int) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 60  # a bound on a hung test, not a speed assertion
    while True:
        view = client.get(f"/api/v1/submissions/{sub_id}", headers=headers).json()
        if view["status"] in ("graded", "error") or time.monotonic() > deadline:
            return view
        time.sleep(0.1)


def test_backup_restore_into_an_empty_database_and_regrade(settings, accounts, basic_set, tmp_path):  # type: ignore[no-untyped-def]
    backup = tmp_path / "course.backup"
    alice = accounts["alice"].headers
    with TestClient(create_app(settings)) as client:
        graded = []
        for answers in ({"b1": "Encoder", "b2": "32"}, {"b1": "Encoder", "b2": "31"}):
            body = {"problem_set": "basic", "problem": "t1", "answers": answers}
            view = client.post("/api/v1/submissions", json=body, headers=alice, params={"wait": 30}).json()
            assert view["status"] == "graded", view
            graded.append(view)
        # Online: the app and its worker keep storing and grading submissions while the backup is taken.
        stop = threading.Event()

        def keep_submitting() -> None:
            body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
            while not stop.is_set():
                assert client.post("/api/v1/submissions", json=body, headers=alice).status_code == 202

        writer = threading.Thread(target=keep_submitting)
        writer.start()
        try:
            done = cli(settings.resolved_database_url, settings.data_dir, "backup", str(backup))
        finally:
            stop.set()
            writer.join()
        assert done.returncode == 0, done.stderr
        assert f"backup written to {backup}" in done.stdout
        again = cli(settings.resolved_database_url, settings.data_dir, "backup", str(backup))
        assert again.returncode == 1 and "exists; pass --force" in again.stderr

    # The source holds data: restoring into it is refused, and it is left as it was.
    refused = cli(settings.resolved_database_url, settings.data_dir, "restore", str(backup))
    assert refused.returncode == 1 and "already holds data" in refused.stderr and "--force" in refused.stderr
    not_a_backup = tmp_path / "notes.txt"
    not_a_backup.write_text("hello")

    with empty_database(settings, tmp_path) as target:
        data_dir = tmp_path / "restored-data"  # a fresh data dir: set versions come back from the database
        bad = cli(target, data_dir, "restore", str(not_a_backup))
        assert bad.returncode == 1 and "is not a backup" in bad.stderr
        missing = cli(target, data_dir, "restore", str(tmp_path / "nope.backup"))
        assert missing.returncode == 1 and "no backup file" in missing.stderr

        done = cli(target, data_dir, "restore", str(backup))
        assert done.returncode == 0, done.stderr
        engine = make_engine(target)
        with make_session_factory(engine)() as session:
            restored_count = session.scalar(select(func.count()).select_from(Submission)) or 0
        engine.dispose()
        assert restored_count >= 2  # the two graded ones, and whatever the writer had committed by the snapshot

        restored = settings.model_copy(update={"database_url": target, "data_dir": data_dir})
        with TestClient(create_app(restored)) as client:
            old = graded[1]
            view = client.get(f"/api/v1/submissions/{old['id']}", headers=alice).json()
            assert view["status"] == "graded" and view["score"] == old["score"] == 1.0
            # Tokens (stored hashed) came back too: the instructor's token regrades the old submission here.
            resp = client.post(f"/api/v1/submissions/{old['id']}/regrade", headers=accounts["instructor"].headers)
            assert resp.status_code == 202, resp.text
            regraded = wait_graded(client, alice, old["id"])
            assert regraded["status"] == "graded", regraded
            assert regraded["score"] == 1.0 and regraded["max_score"] == 3.0
            assert [c["name"] for c in regraded["checks"]] == [c["name"] for c in old["checks"]]
            # A new submission is numbered after the restored ones.
            body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}}
            new = client.post("/api/v1/submissions", json=body, headers=alice, params={"wait": 30}).json()
            assert new["id"] > old["id"] and new["status"] == "graded"

        engine = make_engine(target)
        with make_session_factory(engine)() as session:
            assert session.scalar(select(func.count()).select_from(Submission)) == restored_count + 1
            rows = session.scalar(
                select(func.count()).select_from(CheckResultRow).where(CheckResultRow.submission_id == old["id"])
            )
            assert rows == len(old["checks"])  # the regrade replaced the checks, it did not add to them
        engine.dispose()

        # Into the same (now non-empty) database again: refused without --force, accepted with it.
        assert cli(target, data_dir, "restore", str(backup)).returncode == 1
        forced = cli(target, data_dir, "restore", "--force", str(backup))
        assert forced.returncode == 0, forced.stderr
        engine = make_engine(target)
        with make_session_factory(engine)() as session:
            assert session.scalar(select(func.count()).select_from(Submission)) == restored_count
        engine.dispose()


def test_a_backup_of_one_backend_is_refused_by_the_other(tmp_path):  # type: ignore[no-untyped-def]
    fake_pg = tmp_path / "pg.backup"
    fake_pg.write_bytes(b"PGDMP\x01\x0e\x00 rest")
    done = cli(f"sqlite:///{tmp_path / 'a.db'}", tmp_path / "data", "restore", str(fake_pg))
    assert done.returncode == 1 and "is a postgresql backup; the configured database is sqlite" in done.stderr
    assert not (tmp_path / "a.db").exists()
