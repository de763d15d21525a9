"""Fault: the data dir's disk full (a small tmpfs the test mounts; needs root, skipped otherwise). Writes are refused
with 507 and a clear JSON message (the guard below AUTOGRADER_MIN_FREE_DISK_BYTES; SQLite's own "disk full" when the
guard is off), never a 500; reads still work; nothing is stored half-way, and once space is back everything works
and the database passes SQLite's integrity check."""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.config import Settings
from app.courses import accounts, course_sets
from app.db import make_engine, make_session_factory
from app.main import create_app
from app.migrate import upgrade
from app.submissions.models import Submission
from app.users.models import Role
from tests.conftest import FIXTURE_SETS

DISK_MB = 24
ANSWERS = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}}


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mount)],
                          capture_output=True, text=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write zeros until the file system says ENOSPC; returns the filler file."""
    filler = disk / "filler"
    chunk = b"\0" * (64 << 10)
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(chunk)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    return filler


def wait_final(client: TestClient, headers: dict[str, str], sub_id: int) -> dict:  # type: ignore[type-arg]
    deadline = time.monotonic() + 90  # a bound on a hung test, not a speed assertion
    while True:
        view = client.get(f"/api/v1/submissions/{sub_id}", headers=headers).json()
        if view["status"] in ("graded", "error") or time.monotonic() > deadline:
            return view
        time.sleep(0.1)


def test_a_full_data_disk_refuses_writes_with_507_and_corrupts_nothing(small_disk: Path) -> None:
    data_dir = small_disk / "data"
    data_dir.mkdir()
    settings = Settings(
        data_dir=data_dir,
        secret_key="k" * 40,
        workers=1,
        prewarm_sandbox=False,
        load_problems_on_start=False,
        min_free_disk_bytes=4 << 20,
    )
    db_path = data_dir / "autograder.db"
    upgrade(settings.resolved_database_url)
    engine = make_engine(settings.resolved_database_url)
    sessions = make_session_factory(engine)
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        user, _ = accounts.create_user(session, email="s@example.com", role=Role.STUDENT)
        _, token = accounts.create_token(session, user=user, name="disk")
        session.commit()
    headers = {"Authorization": f"Bearer {token}"}

    def stored() -> int:
        with sessions() as session:
            return int(session.scalar(select(func.count()).select_from(Submission)) or 0)

    with TestClient(create_app(settings)) as client:
        first = client.post("/api/v1/submissions", json=ANSWERS, headers=headers, params={"wait": 30}).json()
        assert first["status"] == "graded", first
        filler = fill(small_disk)
        for _ in range(5):
            resp = client.post("/api/v1/submissions", json=ANSWERS, headers=headers)
            assert resp.status_code == 507, resp.text
            assert "disk is full" in resp.json()["detail"][0]["msg"]
            assert resp.headers["retry-after"].isdigit()
        # Reads still work while the disk is full.
        assert client.get(f"/api/v1/submissions/{first['id']}", headers=headers).json()["status"] == "graded"
        assert client.get("/healthz").status_code == 200
    assert stored() == 1

    # With the guard off, the write reaches SQLite: stored whole (its pages fit) or refused with 507, never a 500
    # (the test client re-raises a server error, so a 500 fails here).
    unguarded = settings.model_copy(update={"min_free_disk_bytes": 0})
    accepted = []
    with TestClient(create_app(unguarded)) as client:
        for _ in range(3):
            resp = client.post("/api/v1/submissions", json=ANSWERS, headers=headers)
            assert resp.status_code in (202, 507), resp.text
            if resp.status_code == 202:
                accepted.append(resp.json()["id"])
            else:
                assert "disk is full" in resp.json()["detail"][0]["msg"]
        assert stored() == 1 + len(accepted)

        filler.unlink()  # space is back
        for sub_id in accepted:
            assert wait_final(client, headers, sub_id)["status"] in ("graded", "error")
        again = client.post("/api/v1/submissions", json=ANSWERS, headers=headers, params={"wait": 30}).json()
        assert again["status"] == "graded", again
        assert client.get(f"/api/v1/submissions/{first['id']}", headers=headers).json()["score"] == first["score"]
    print(f"\nguard off on a full disk: {len(accepted)} of 3 posts stored whole, the others refused with 507")
    engine.dispose()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    assert stored() == 2 + len(accepted)
