"""Code problems through the API: multipart .py upload or JSON source, graded in the sandbox by the workers."""

from __future__ import annotations

import pytest

from tests.app.test_problemset_upload import upload, zip_dir
from tests.conftest import FIXTURE_SETS

CORRECT = "def add(a, b):\n    return a + b\n"
BROKEN = "def add(a, b):\n    return a * b\n"

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and uploads
# the set again. What it saves is the sandbox: a new app starts its zygotes (the torch import in the jail, seconds)
# on its first code grading, and every test here grades code. The tests wait for their gradings (wait=60), so no
# work outlives a test.
pytestmark = pytest.mark.shared_app


@pytest.fixture
def code_set(client, accounts):  # type: ignore[no-untyped-def]
    resp = upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "codeset"))
    assert resp.status_code == 201, resp.text
    return resp.json()


def test_upload_runs_the_mutant_gate(code_set) -> None:  # type: ignore[no-untyped-def]
    gate = code_set["report"]["mutant_gates"]["c1"]
    assert gate["ok"] is True
    assert code_set["report"]["points"]["c1"] == 3.0


def test_correct_and_broken_uploads(client, accounts, code_set) -> None:  # type: ignore[no-untyped-def]
    headers = accounts["alice"].headers
    ok = client.post(
        "/api/v1/submissions",
        params={"wait": 60},
        data={"problem_set": "codeset", "problem": "c1"},
        files={"file": ("solution.py", CORRECT.encode())},
        headers=headers,
    ).json()
    assert ok["status"] == "graded" and ok["verdict"] == "accepted"
    assert ok["final_score"] == ok["max_score"] == 3.0
    broken = client.post(
        "/api/v1/submissions",
        params={"wait": 60},
        json={"problem_set": "codeset", "problem": "c1", "code": BROKEN},
        headers=headers,
    ).json()
    assert broken["status"] == "graded" and broken["final_score"] < 3.0
    failed = [c for c in broken["checks"] if not c["passed"]]
    assert failed and all(c["feedback"] for c in failed)
    # How long a hidden check ran is not shown to the student (a sleep could spell a hidden input); staff see it.
    durations = {c["visibility"]: c["duration_ms"] for c in ok["checks"]}
    assert durations["hidden"] == 0.0 and durations["visible"] > 0
    as_staff = client.get(f"/api/v1/submissions/{ok['id']}", headers=accounts["instructor"].headers).json()
    assert all(c["duration_ms"] > 0 for c in as_staff["checks"])


def test_syntax_error_is_a_student_verdict(client, accounts, code_set) -> None:  # type: ignore[no-untyped-def]
    resp = client.post(
        "/api/v1/submissions",
        params={"wait": 60},
        json={"problem_set": "codeset", "problem": "c1", "code": "def add(a, b)\n    return a + b\n"},
        headers=accounts["alice"].headers,
    ).json()
    assert resp["verdict"] == "syntax_error" and resp["final_score"] == 0
    assert "SyntaxError" in resp["message"] and "line 1" in resp["message"]


@pytest.mark.parametrize(
    ("files", "json_body", "message"),
    [
        ({"file": ("s.py", b"\xff\xfe def add")}, None, "not UTF-8"),
        (None, {"code": "x = 1\n" * 50_000}, "larger than 20 KiB"),
        (None, {"answers": {"b1": "x"}}, "code problem"),
    ],
)
def test_bad_code_submissions_are_422(client, accounts, code_set, files, json_body, message) -> None:  # type: ignore[no-untyped-def]
    headers = accounts["alice"].headers
    if files is not None:
        resp = client.post(
            "/api/v1/submissions", data={"problem_set": "codeset", "problem": "c1"}, files=files, headers=headers
        )
    else:
        resp = client.post(
            "/api/v1/submissions", json={"problem_set": "codeset", "problem": "c1", **json_body}, headers=headers
        )
    assert resp.status_code == 422, resp.text
    assert message in resp.text
    assert client.get("/api/v1/submissions", headers=headers).json() == []
