"""One input path: a file saved by a Windows editor (UTF-8 BOM, CRLF line ends) grades the same through the API
(multipart and JSON), the web form and the offline CLI, and is stored the same way; bytes that are not UTF-8 are
refused everywhere with the offset of the first bad byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from app.cli.main import app as cli
from app.config import get_settings
from app.submissions.intake import decode_source
from app.submissions.models import Submission
from tests.app.test_code_submissions import CORRECT, code_set  # noqa: F401
from tests.conftest import FIXTURE_SETS, REPO
from tests.web.conftest import csrf_of, login, wait_graded

WINDOWS = b"\xef\xbb\xbf" + CORRECT.encode().replace(b"\n", b"\r\n")
LATIN1 = "# café\n".encode("latin-1") + CORRECT.encode()  # 0xe9 at offset 5

# One app per module and backend (tests/conftest.py), as in test_code_submissions: the two API tests grade code, and
# sharing the app spares the second its own sandbox start. The CLI runs use their own data dir (tmp_path).
pytestmark = pytest.mark.shared_app


def _post_file(client, account, data: bytes):  # type: ignore[no-untyped-def]
    return client.post(
        "/api/v1/submissions",
        params={"wait": 60},
        data={"problem_set": "codeset", "problem": "c1"},
        files={"file": ("solution.py", data)},
        headers=account.headers,
    )


def _run_cli(tmp_path: Path, *args: str):  # type: ignore[no-untyped-def]
    env = {"AUTOGRADER_DATA_DIR": str(tmp_path / "data"), "AUTOGRADER_PROBLEMS_DIR": str(REPO / "problems")}
    get_settings.cache_clear()
    try:
        return CliRunner().invoke(cli, list(args), env=env)
    finally:
        get_settings.cache_clear()


def test_bom_and_crlf_grade_the_same_everywhere(client, accounts, code_set, sessions, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    alice = accounts["alice"]
    multipart = _post_file(client, alice, WINDOWS).json()
    as_json = client.post(
        "/api/v1/submissions",
        params={"wait": 60},
        json={"problem_set": "codeset", "problem": "c1", "code": WINDOWS.decode("utf-8")},
        headers=alice.headers,
    ).json()
    token = login(client, alice)
    page = client.post(
        "/sets/codeset/problems/c1",
        data={"csrf_token": token},
        files={"file": ("solution.py", WINDOWS, "text/x-python")},
        follow_redirects=False,
    )
    assert page.status_code == 303, page.text
    web_id = int(page.headers["location"].rsplit("/", 1)[1])
    assert 'class="score">3</span><span class="of"> / 3<' in wait_graded(client, web_id)

    for result in (multipart, as_json):
        assert result["status"] == "graded" and result["verdict"] == "accepted", result
        assert result["final_score"] == 3.0

    file = tmp_path / "solution.py"
    file.write_bytes(WINDOWS)
    offline = _run_cli(
        tmp_path, "grade", "--set", str(FIXTURE_SETS / "codeset"), "--problem", "c1", str(file), "--json"
    )
    assert offline.exit_code == 0, offline.output
    assert json.loads(offline.output)["score"] == 3.0

    with sessions() as session:
        stored = {s.payload["code"] for s in session.scalars(select(Submission))}
    assert stored == {CORRECT}


def test_invalid_utf8_is_refused_with_its_offset(client, accounts, code_set, sessions, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    resp = _post_file(client, accounts["alice"], LATIN1)
    assert resp.status_code == 422
    detail = resp.json()["detail"][0]
    assert detail["loc"] == ["body", "file"]
    assert "byte 0xe9 at offset 5" in detail["msg"] and "UTF-8" in detail["msg"]

    token = login(client, accounts["alice"])
    page = client.post(
        "/sets/codeset/problems/c1", data={"csrf_token": token}, files={"file": ("a.py", LATIN1, "text/x-python")}
    )
    assert page.status_code == 422 and "byte 0xe9 at offset 5" in page.text
    assert csrf_of(page.text)  # the form is shown again, ready for another try

    file = tmp_path / "latin1.py"
    file.write_bytes(LATIN1)
    offline = _run_cli(tmp_path, "grade", "--set", str(FIXTURE_SETS / "codeset"), "--problem", "c1", str(file))
    assert offline.exit_code == 2 and "byte 0xe9 at offset 5" in offline.output

    with sessions() as session:
        assert session.scalars(select(Submission)).first() is None  # nothing was stored


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b"\xef\xbb\xbfx = 1\r\n", "x = 1\n"),
        (b"x = 1\ry = 2\r\n", "x = 1\ny = 2\n"),
        ("x = 'é'\r\n".encode(), "x = 'é'\n"),
        ("\ufeffx = 1\r\n", "x = 1\n"),
    ],
)
def test_decode_source(raw: bytes | str, expected: str) -> None:
    assert decode_source(raw) == expected
