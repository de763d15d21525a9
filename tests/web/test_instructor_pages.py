"""Instructor pages: upload with the validation report, gradebook page, regrade and manual grading forms."""

from __future__ import annotations

import io
import re
import time
import zipfile

import pytest

from tests.conftest import FIXTURE_SETS
from tests.web.conftest import wait_graded

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def upload_and_wait(client, token: str, archive: bytes, name: str = "basic.zip"):  # type: ignore[no-untyped-def]
    """Upload through the form, then follow its progress page until the report is there (202 while validating)."""
    started = client.post("/instructor/upload", data={"csrf_token": token},
                          files={"file": (name, archive, "application/zip")}, follow_redirects=False)  # fmt: skip
    assert started.status_code == 303, started.text
    deadline = time.monotonic() + 60
    while True:
        page = client.get(started.headers["location"])
        if page.status_code != 202 or time.monotonic() > deadline:
            return page
        time.sleep(0.05)


def _basic_files() -> dict[str, bytes]:
    root = FIXTURE_SETS / "basic"
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_upload_shows_the_validation_report(as_instructor):  # type: ignore[no-untyped-def]
    client, token = as_instructor
    home = client.get("/instructor")
    assert home.status_code == 200 and "/instructor/sets/basic/gradebook" in home.text

    files = _basic_files()
    files["problemset.yaml"] = files["problemset.yaml"].replace(b"reject: [decoder]", b"reject: [encoder]")
    bad = upload_and_wait(client, token, _zip(files))
    assert bad.status_code == 422 and "Refused" in bad.text
    assert "problems[0] (t1).b1.reject" in bad.text and "should be rejected" in bad.text

    files = _basic_files()
    files["problemset.yaml"] = files["problemset.yaml"].replace(b"title: Basic test set", b"title: Basic, version 2")
    good = upload_and_wait(client, token, _zip(files))
    assert good.status_code == 200 and "as version 2" in good.text and "answer cases checked" in good.text

    none = client.post("/instructor/upload", data={"csrf_token": token})
    assert none.status_code == 422 and "Choose a .zip" in none.text


def test_gradebook_page_regrade_and_manual_grade(accounts, as_instructor):  # type: ignore[no-untyped-def]
    client, token = as_instructor
    body = {"problem_set": "basic", "problem": "t3", "answers": {"b1": "We held the split equal."}}
    sub_id = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers,
                         params={"wait": 10}).json()["id"]  # fmt: skip

    page = client.get("/instructor/sets/basic/gradebook")
    assert page.status_code == 200 and "alice@example.com" in page.text
    assert "/api/v1/gradebook/basic.csv" in page.text and "Per-question statistics" in page.text
    assert "Awaiting manual grading" in page.text and f"/submissions/{sub_id}" in page.text

    html = client.get(f"/submissions/{sub_id}").text
    assert "Regrade" in html and "Save manual grade" in html and "alice@example.com" in html

    for value, message in (("4", "between 0 and 3"), ("abc", "not a number"), ("-1", "between 0 and 3")):
        resp = client.post(f"/submissions/{sub_id}/manual-grade",
                           data={"manual_score": value, "feedback": "x", "csrf_token": token})  # fmt: skip
        assert resp.status_code == 422 and message in resp.text and "manual_score" in resp.text

    ok = client.post(f"/submissions/{sub_id}/manual-grade",
                     data={"manual_score": "2.5", "feedback": "清楚，但缺少对照组。", "csrf_token": token},
                     follow_redirects=False)  # fmt: skip
    assert ok.status_code == 303
    html = client.get(f"/submissions/{sub_id}").text
    assert re.search(r'class="score">2.5</span>', html) and "清楚，但缺少对照组。" in html

    again = client.post(f"/submissions/{sub_id}/regrade", data={"csrf_token": token}, follow_redirects=False)
    assert again.status_code == 303 and again.headers["location"] == f"/submissions/{sub_id}"
    assert "Graded" in wait_graded(client, sub_id)


def test_pending_hand_grading_is_left_out_of_the_gradebook_total(accounts, as_instructor):  # type: ignore[no-untyped-def]
    client, _ = as_instructor
    alice = accounts["alice"].headers
    client.post("/api/v1/submissions", json={"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder",
                "b2": "32"}}, headers=alice, params={"wait": 10})  # fmt: skip
    client.post("/api/v1/submissions", json={"problem_set": "basic", "problem": "t3", "answers": {"b1": "held"}},
                headers=alice, params={"wait": 10})  # fmt: skip
    html = client.get("/instructor/sets/basic/gradebook").text
    assert 'class="cell-pending"' in html and ">pending</a>" in html
    assert re.search(r"<strong>3</strong> <span class=\"muted small\">/ \d+</span>\s*<br><span class=\"muted small\">"
                     r"\+ 1 pending", html)  # fmt: skip


def test_a_set_refused_at_start_up_is_shown_to_instructors(as_instructor, settings, sessions, tmp_path):  # type: ignore[no-untyped-def]
    from app.cli.problems import load_one
    from app.worker.code_grader import LazyCodeGrader

    client, _ = as_instructor
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "problemset.yaml").write_text("id: broken\ntitle: Broken\nproblems:\n  - id: q1\n    kind: fill_in\n")
    assert load_one(sessions, broken, LazyCodeGrader(settings)) is False
    html = client.get("/instructor").text
    assert "Refused at start-up: <code>broken</code>" in html and "problemset.yaml" in html


def test_grading_queue_scores_checked_rubric_items_and_goes_on(accounts, as_instructor, sessions):  # type: ignore[no-untyped-def]
    from app.courses.models import Membership

    client, token = as_instructor
    with sessions() as session:  # the roster's name is the one the queue shows
        session.query(Membership).filter_by(email="alice@example.com").one().name = "Alice Liddell"
        session.commit()
    for who in ("alice", "bob"):
        body = {"problem_set": "basic", "problem": "t3", "answers": {"b1": f"{who} held"}}
        client.post("/api/v1/submissions", json=body, headers=accounts[who].headers, params={"wait": 10})
    page = client.get("/instructor/sets/basic/queue/t3")
    assert page.status_code == 200 and "alice held" in page.text and "alice@example.com" in page.text
    assert "Alice Liddell" in page.text
    assert "2 in the queue" in page.text and 'name="met" value="r1"' in page.text
    anonymous = client.get("/instructor/sets/basic/queue/t3", params={"anonymous": 1}).text
    assert "alice held" in anonymous and "alice@example.com" not in anonymous and "Liddell" not in anonymous
    first = int(re.search(r'/queue/t3/(\d+)"', page.text).group(1))  # type: ignore[union-attr]
    saved = client.post(f"/instructor/sets/basic/queue/t3/{first}", data={"csrf_token": token, "met": "r1",
                        "comment.r1": "clear", "anonymous": "1"}, follow_redirects=False)  # fmt: skip
    assert saved.status_code == 303 and saved.headers["location"].endswith("/queue/t3?anonymous=1")
    view = client.get(f"/api/v1/submissions/{first}").json()
    assert (
        view["manual_score"] == 3
        and "✓ met (3 pts): names the conditions held equal\n   clear" in view["manual_feedback"]
    )
    nxt = client.get("/instructor/sets/basic/queue/t3").text
    assert "bob held" in nxt and "1 in the queue" in nxt
    forged = client.post(f"/instructor/sets/basic/queue/t3/{first}", data={"csrf_token": token, "met": "r9"})
    assert forged.status_code == 422 and "unknown rubric items" in forged.text
    alice = client.get(f"/api/v1/submissions/{first}", headers=accounts["alice"].headers).json()
    assert alice["manual_feedback"].startswith("✓ met")
