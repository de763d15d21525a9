"""An upload is validated in the background: the form answers at once with a progress page that follows the
mutant gate file by file, then shows the report; only the uploader sees it."""

from __future__ import annotations

import io
import re
import time
import zipfile
from pathlib import Path
from types import SimpleNamespace

import pytest
from fastapi.testclient import TestClient

from app.courses import accounts as account_service
from app.users.models import Role
from tests.conftest import FIXTURE_SETS
from tests.web.conftest import login


def _zip_dir(folder: Path) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for file in sorted(folder.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                archive.writestr(file.relative_to(folder).as_posix(), file.read_bytes())
    return buffer.getvalue()


# The job runs in the API process whatever the database; one backend is enough for the progress it shows.
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_code_set_upload_shows_the_gates_progress(client, accounts, as_instructor, sessions):  # type: ignore[no-untyped-def]
    client, token = as_instructor
    root = FIXTURE_SETS / "codeset"
    expected = len(list(root.glob("solutions/*/*.py"))) + len(list(root.glob("mutants/*/*.py")))
    assert expected > 1
    started = client.post("/instructor/upload", data={"csrf_token": token},
                          files={"file": ("codeset.zip", _zip_dir(root), "application/zip")},
                          follow_redirects=False)  # fmt: skip
    assert started.status_code == 303
    page_url = started.headers["location"]
    assert re.fullmatch(r"/instructor/uploads/[\w-]+", page_url)

    seen: list[tuple[int, int]] = []  # (graded, total) as the live part reported them
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        live = client.get(page_url + "/live")
        assert live.status_code == 200
        match = re.search(r"Mutant gate: (\d+) of (\d+) files graded", live.text)
        if match:
            seen.append((int(match.group(1)), int(match.group(2))))
        if live.headers["X-Progress"] == "done":
            break
        time.sleep(0.05)
    assert live.headers["X-Progress"] == "done"
    assert seen[-1] == (expected, expected) and "· done" in live.text  # the last answer has the full count
    assert all(total == expected for _, total in seen)  # the count of files the gate grades, known up front
    assert [g for g, _ in seen] == sorted(g for g, _ in seen)  # it only goes forward
    assert "c1: solution plain.py: " in live.text and "c1: mutant subtracts.py: " in live.text  # the gate's lines

    done = client.get(page_url)
    assert done.status_code == 200 and "table" in done.text and "matrix" in done.text
    assert "Stored <strong>codeset</strong>" in done.text

    # Another instructor of the same offering gets a 404 for this upload's pages; a student has no such pages.
    with sessions() as session:
        _, password = account_service.create_user(session, email="second@example.com", role=Role.INSTRUCTOR)
        session.commit()
    for email, secret, status in (
        ("second@example.com", password, 404),
        (accounts["alice"].email, accounts["alice"].password, 403),
    ):
        other = TestClient(client.app)
        login(other, SimpleNamespace(email=email, password=secret))
        assert other.get(page_url).status_code == status, email
        assert other.get(page_url + "/live").status_code == status, email
    assert client.get("/instructor/uploads/not-a-job").status_code == 404
    assert client.get("/instructor/uploads/not-a-job/live").status_code == 404
