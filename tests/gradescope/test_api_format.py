"""`GET /api/v1/submissions/{id}?format=gradescope`: the same document as the CLI writes, filtered for the viewer."""

from __future__ import annotations

from sqlalchemy import update

from app.courses.course_sets import load_dir
from app.submissions.models import CheckResultRow
from tests.app.test_visibility_and_failures import basic_due_in_future, wait_graded
from tests.gradescope.test_run_autograder import validate


def test_sealed_check_stays_sealed_in_the_gradescope_document(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    with sessions() as session:
        load_dir(session, root=basic_due_in_future(tmp_path), grader=None)
        session.commit()
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder", "b2": "32"}}
    sub_id = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers).json()["id"]
    wait_graded(client, accounts["alice"], sub_id)
    with sessions() as session:
        session.execute(
            update(CheckResultRow)
            .where(CheckResultRow.submission_id == sub_id, CheckResultRow.name == "b2")
            .values(visibility="after_due")
        )
        session.commit()
    url = f"/api/v1/submissions/{sub_id}"
    student = client.get(url, params={"format": "gradescope"}, headers=accounts["alice"].headers)
    assert student.status_code == 200, student.text
    doc = student.json()
    tests = {t["name"]: t for t in doc["tests"]}
    assert tests["b1"] == {**tests["b1"], "status": "passed", "score": 1.0, "visibility": "visible"}
    # Sealed: no score, no status, Gradescope told to open it at the due date; the total leaves it out.
    assert tests["b2"]["score"] is None and tests["b2"]["status"] is None
    assert tests["b2"]["visibility"] == "after_due_date"
    assert doc["score"] == 1.0
    staff = client.get(url, params={"format": "gradescope"}, headers=accounts["instructor"].headers).json()
    validate(staff)
    assert staff["score"] == 3.0 and {t["status"] for t in staff["tests"]} == {"passed"}
    # The default view is unchanged, and another student's submission is still a 404 in either format.
    assert "checks" in client.get(url, headers=accounts["alice"].headers).json()
    assert client.get(url, params={"format": "gradescope"}, headers=accounts["bob"].headers).status_code == 404


def test_unknown_format_is_422(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder", "b2": "32"}}
    sub_id = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers).json()["id"]
    resp = client.get(f"/api/v1/submissions/{sub_id}", params={"format": "xml"}, headers=accounts["alice"].headers)
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["query", "format"]
