"""The checker's jail, attacked through the served app: an instructor uploads a hostile set over the API.

``tests/sandbox/test_checker_attacks.py`` attacks the grader itself; this is the path a real instructor of another
offering takes: ``POST /api/v1/problem-sets``, whose gate runs in ``autograder serve``'s own process, next to the
app's real secret key file and SQLite database. Each attempt of the set's checks must fail, the upload must be
refused as the set's own failure, and nothing the attempts could have read may appear in the answer.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from tests.app.test_problemset_upload import upload, zip_dir
from tests.sandbox import support
from tests.sandbox.test_checker_attacks import ATTACKS, _write_set


@pytest.fixture
def database_url(tmp_path: Path, sqlite_template: Path) -> str:
    # SQLite only: the attack reads the database file, which a PostgreSQL deployment does not have beside it.
    path = tmp_path / "served.db"
    path.write_bytes(sqlite_template.read_bytes())
    return f"sqlite:///{path}"


@pytest.fixture
def served(settings: Settings, tmp_path: Path) -> Iterator[tuple[TestClient, Settings, dict[str, Any]]]:
    support.require_jail()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    secret = settings.resolved_secret_key()
    key_file = settings.data_dir / "secret_key"  # where the app keeps a generated key
    key_file.write_text(secret)
    key_file.chmod(0o600)
    targets = {
        "SECRET": secret,
        "SECRET_FILE": str(key_file),
        "DB_FILE": str(tmp_path / "served.db"),
        "SERVICE_PID": os.getpid(),  # the TestClient runs the app, and so its upload gate, in this process
        "OUTSIDE": str(tmp_path / "escaped.txt"),
    }
    with TestClient(create_app(settings)) as client:
        yield client, settings, targets


def test_a_hostile_set_uploaded_over_the_api_reaches_nothing_of_the_service(served, accounts, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client, _, targets = served
    root = _write_set(tmp_path / "hostile", targets)
    answer = upload(client, accounts["instructor"], zip_dir(root, prefix="hostile/"))
    assert answer.status_code == 422, answer.text
    assert "reference solution scored 0/" in answer.text  # every attempt lost its point: none succeeded
    assert targets["SECRET"] not in answer.text
    assert "SQLite format" not in answer.text
    assert not Path(targets["OUTSIDE"]).exists()
    assert client.get("/healthz").status_code == 200  # signalled or not, the service answers on
    assert len(ATTACKS) == 15  # the attempts of the grader-level test, each one of the points lost
