"""The course pages, as a new instructor and a student would use them: assignment settings with 3 attempts and
the answer key after the due date, an extension for one student, a roster import with preview, and the student's
fourth attempt and malformed answer refused on the set page. The other offering's student sees nothing."""

from __future__ import annotations

import html as htmllib
from datetime import timedelta
from zoneinfo import ZoneInfo

from fastapi.testclient import TestClient

from app.db import utcnow
from tests.courses.conftest import World
from tests.web.conftest import login, wait_graded


def _browser(client: TestClient) -> TestClient:
    return TestClient(client.app)


def test_an_instructor_runs_an_assignment_through_the_pages(client, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = _browser(client)
    token = login(teacher, world.people["a:instructor"])
    home = teacher.get(f"/offerings/{world.a}")
    assert home.status_code == 200 and "basic" in home.text.lower()
    due = (utcnow() + timedelta(days=3)).astimezone(ZoneInfo("UTC")).strftime("%Y-%m-%dT%H:%M")
    form = {
        "csrf_token": token,
        "open_at": "",
        "due_at": due,
        "late_penalty_per_day": "",
        "max_late_days": "",
        "max_attempts": "3",
        "cooldown_s": "0",
        "decay_per_attempt": "0",
        "counts": "best",
        "release_scores": "immediately",
        "release_feedback": "immediately",
        "release_explanation": "immediately",
        "release_answer_key": "after_due",
    }
    saved = teacher.post(f"/assignments/{world.assignment_a}/settings", data=form)
    assert saved.status_code == 200 and "Saved." in saved.text, saved.text[-500:]
    bad = teacher.post(f"/assignments/{world.assignment_a}/settings", data={**form, "max_attempts": "0"})
    assert bad.status_code == 422 and "max_attempts" in bad.text
    ext = (utcnow() + timedelta(days=5)).strftime("%Y-%m-%dT%H:%M")
    added = teacher.post(
        f"/assignments/{world.assignment_a}/overrides",
        follow_redirects=False,
        data={"csrf_token": token, "email": "bob@example.com", "due_at": ext, "extra_attempts": "0"},
    )
    assert added.status_code == 303
    assert "bob@example.com" in teacher.get(f"/assignments/{world.assignment_a}/settings").text

    preview = teacher.post(
        f"/offerings/{world.a}/roster",
        data={"csrf_token": token},
        files={"file": ("r.csv", "\ufeffemail,section\nzoe@example.com,S9\n".encode(), "text/csv")},
    )
    assert preview.status_code == 200 and "Preview (nothing written yet)" in preview.text
    assert "zoe@example.com" not in teacher.get(f"/offerings/{world.a}/roster").text.split("<tbody>")[-1]
    csv_text = htmllib.unescape(preview.text.split('<textarea name="csv" hidden>')[1].split("</textarea>")[0])
    applied = teacher.post(f"/offerings/{world.a}/roster", data={"csrf_token": token, "apply": "yes", "csv": csv_text})
    assert "Applied: 1 added" in applied.text
    assert "zoe@example.com" in teacher.get(f"/offerings/{world.a}/roster").text

    # The student: three attempts, the fourth refused on the set page; a malformed answer refused, not counted.
    student = _browser(client)
    stoken = login(student, world.people["a:alice"])
    answers = {"csrf_token": stoken, "offering": str(world.a), "answer.b1": "encoder", "answer.b2": "31"}
    malformed = student.post("/sets/basic/problems/t1", data={**answers, "answer.b2": "3 1 )"})
    assert malformed.status_code == 422 and "invalid format: not counted" in malformed.text
    for _ in range(3):
        resp = student.post("/sets/basic/problems/t1", data=answers, follow_redirects=False)
        assert resp.status_code == 303, resp.text[-400:]
        page = wait_graded(student, int(resp.headers["location"].rsplit("/", 1)[1]))
        assert "Answer key" not in page and "The encoder" not in page  # the key opens after the due date
    fourth = student.post("/sets/basic/problems/t1", data=answers)
    assert fourth.status_code == 429 and "no attempts left at t1: all 3 are used" in fourth.text

    # A student of the other offering sees nothing of this one.
    other = _browser(client)
    login(other, world.people["b:student"])
    assert other.get(f"/offerings/{world.a}").status_code == 404
    assert other.get(f"/assignments/{world.assignment_a}/settings").status_code == 404
    assert other.get(f"/offerings/{world.a}/roster").status_code == 404
    assert f"/offerings/{world.a}" not in other.get("/courses").text
