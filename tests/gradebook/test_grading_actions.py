"""Regrade (requeue, the worker grades again) and manual grades (bounded by the rubric, 404 before a grade)."""

from __future__ import annotations

import time

from app.courses.access import access_for
from app.courses.service import default_assignment
from app.db import utcnow
from app.problemsets.service import get_latest
from app.submissions.models import Status, Submission
from tests.gradebook.conftest import submit


def test_regrade_requeues_and_the_worker_grades_again(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    first = submit(client, accounts["alice"], "t1", {"b1": "Encoder", "b2": "31"})
    url = f"/api/v1/submissions/{first['id']}/regrade"
    assert client.post(url, headers=accounts["alice"].headers).status_code == 403
    resp = client.post(url, headers=accounts["instructor"].headers)
    assert resp.status_code == 202
    assert resp.json() == {"id": first["id"], "status": "queued", "status_url": f"/api/v1/submissions/{first['id']}"}
    deadline = time.monotonic() + 10
    while (view := client.get(first["status_url"], headers=accounts["alice"].headers).json())["status"] != "graded":
        assert time.monotonic() < deadline, view
        time.sleep(0.02)
    assert view["score"] == first["score"] and len(view["checks"]) == len(first["checks"])  # replaced, not doubled
    assert client.post("/api/v1/submissions/999999/regrade", headers=accounts["instructor"].headers).status_code == 404


def test_manual_grade_adds_to_the_final_score(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    sub = submit(client, accounts["alice"], "t3", {"b1": "We held the split equal."})
    url = f"/api/v1/submissions/{sub['id']}/manual-grade"
    resp = client.post(url, json={"manual_score": 2.5, "feedback": " good "}, headers=accounts["instructor"].headers)
    assert resp.status_code == 200
    assert resp.json() == {"submission_id": sub["id"], "auto_score": 0.0, "manual_score": 2.5, "final_score": 2.5,
                           "max_score": 3.0, "manual_feedback": "good",
                           "manual_graded_by_id": accounts["instructor"].id}  # fmt: skip
    view = client.get(sub["status_url"], headers=accounts["alice"].headers).json()
    assert view["final_score"] == 2.5 and view["manual_score"] == 2.5
    assert sub["verdict"] == "pending_manual" and view["verdict"] == "partial"  # nothing pending any more
    book = client.get("/api/v1/gradebook/basic", headers=accounts["instructor"].headers).json()
    alice = next(r for r in book["students"] if r["email"] == "alice@example.com")
    assert alice["cells"]["t3"]["best_score"] == 2.5
    as_student = client.post(url, json={"manual_score": 1, "feedback": ""}, headers=accounts["alice"].headers)
    assert as_student.status_code == 403


def test_manual_grade_out_of_range_is_422_naming_the_field(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    essay = submit(client, accounts["alice"], "t3", {"b1": "essay"})["id"]
    fill_in = submit(client, accounts["alice"], "t1", {"b1": "Encoder"})["id"]
    cases = [
        (essay, {"manual_score": 3.5, "feedback": ""}, "between 0 and 3"),
        (essay, {"manual_score": -1, "feedback": ""}, "greater than or equal to 0"),
        (essay, {"feedback": ""}, "Field required"),
        (fill_in, {"manual_score": 1, "feedback": ""}, "no rubric"),
    ]
    for sub_id, body, message in cases:
        resp = client.post(f"/api/v1/submissions/{sub_id}/manual-grade", json=body,
                           headers=accounts["instructor"].headers)  # fmt: skip
        assert resp.status_code == 422, resp.text
        detail = resp.json()["detail"][0]
        assert detail["loc"] == ["body", "manual_score"] and message in detail["msg"], detail


def test_manual_grade_before_any_grade_is_404(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    with sessions() as session:
        # A row some other worker holds: no grade yet, and none is written while the test runs.
        version = get_latest(session, "basic")
        assignment_id = default_assignment(session, version.problem_set).id
        row = Submission(user_id=accounts["alice"].id, problem_set_version_id=version.id, problem_id="t3",
                         assignment_id=assignment_id,
                         payload={"answers": {"b1": "x"}}, status=Status.RUNNING,
                         claimed_by="elsewhere:1:0", lease_until=utcnow().replace(year=2100))  # fmt: skip
        session.add(row)
        session.commit()
        sub_id = row.id
    resp = client.post(f"/api/v1/submissions/{sub_id}/manual-grade", json={"manual_score": 1, "feedback": ""},
                       headers=accounts["instructor"].headers)  # fmt: skip
    assert resp.status_code == 404 and "no grade yet" in resp.json()["detail"][0]["msg"]
    missing = client.post("/api/v1/submissions/999999/manual-grade", json={"manual_score": 1, "feedback": ""},
                          headers=accounts["instructor"].headers)  # fmt: skip
    assert missing.status_code == 404


def test_regrade_keeps_the_manual_score(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    sub = submit(client, accounts["alice"], "t3", {"b1": "We held the split equal."})
    staff = accounts["instructor"].headers
    client.post(f"/api/v1/submissions/{sub['id']}/manual-grade", json={"manual_score": 2, "feedback": "ok"},
                headers=staff)  # fmt: skip
    assert client.post(f"/api/v1/submissions/{sub['id']}/regrade", headers=staff).status_code == 202
    deadline = time.monotonic() + 10
    while (view := client.get(sub["status_url"], headers=staff).json())["status"] != "graded":
        assert time.monotonic() < deadline, view
        time.sleep(0.02)
    assert view["manual_score"] == 2 and view["manual_feedback"] == "ok" and view["final_score"] == 2
    assert view["verdict"] == "partial"


def test_a_manual_grade_racing_a_regrade_is_a_409_not_a_500(client, accounts, basic_set, sessions, settings):  # type: ignore[no-untyped-def]
    # The fuzzer found it: a regrade's worker replaces the grade row between the manual grade's read and its
    # write, whose UPDATE then matches no row (StaleDataError, a 500). Here the worker's replacement is played by
    # a second connection that deletes the row just before the manual grade flushes.
    import pytest
    from sqlalchemy import delete, event

    from app.errors import Conflict
    from app.gradebook import service as gradebook
    from app.submissions.models import Grade
    from app.users.models import User

    if not settings.resolved_database_url.startswith("postgresql"):
        pytest.skip("on SQLite the stale snapshot is refused as a busy database (a 503) before any UPDATE")
    sub = submit(client, accounts["alice"], "t3", {"b1": "We held the split equal."})
    with sessions() as session:
        instructor = session.get(User, accounts["instructor"].id)

        @event.listens_for(session, "before_flush")
        def regrade_lands(*_: object) -> None:
            with sessions() as other:
                other.execute(delete(Grade).where(Grade.submission_id == sub["id"]))
                other.commit()

        with pytest.raises(Conflict, match="regraded"):
            gradebook.manual_grade(
                session,
                access=access_for(session, instructor),
                submission_id=sub["id"],
                grader=instructor,
                manual_score=1,
                feedback="",
            )
