"""Submitting answers through the real app: 202 + status URL, ?wait, idempotency, feedback, visibility."""

from __future__ import annotations

import time

import pytest

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie.
pytestmark = pytest.mark.shared_app


def submit(client, account, body, **params):  # type: ignore[no-untyped-def]
    return client.post("/api/v1/submissions", json=body, headers=account.headers, params=params)


def test_fill_in_is_graded_with_feedback_per_part(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    resp = submit(
        client,
        accounts["alice"],
        {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "31"}},
        wait=10,
    )
    assert resp.status_code == 202
    body = resp.json()
    assert resp.headers["location"] == body["status_url"] == f"/api/v1/submissions/{body['id']}"
    assert body["status"] == "graded"
    assert body["score"] == 1.0 and body["max_score"] == 3.0
    assert body["verdict"] == "partial"
    checks = {c["name"]: c for c in body["checks"]}
    assert checks["b1"]["passed"] is True
    assert checks["b2"]["passed"] is False and checks["b2"]["feedback"]
    assert "32" not in checks["b2"]["feedback"]  # feedback never gives the answer away
    # The default release of the answer key (and so of the explanation, which may state it) is "after the attempts
    # run out or full marks": a partial answer with attempts left sees neither.
    assert body["explanation"] is None and body["answer_key"] is None
    full = submit(
        client,
        accounts["alice"],
        {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}},
        wait=10,
    ).json()
    assert full["verdict"] == "accepted"
    assert full["explanation"]["markdown"].startswith("The encoder")
    assert full["answer_key"]["b2"] == "32"


def test_without_wait_returns_queued_then_grades(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    resp = submit(client, accounts["alice"], {"problem_set": "basic", "problem": "t2", "answers": {"b1": "（B）"}})
    assert resp.status_code == 202
    assert resp.json()["status"] in ("queued", "running", "graded")
    status_url = resp.json()["status_url"]
    deadline = time.monotonic() + 60  # a bound on a hung test, not a speed assertion
    final = client.get(status_url, headers=accounts["alice"].headers)
    while final.json()["status"] != "graded" and time.monotonic() < deadline:
        time.sleep(0.05)
        final = client.get(status_url, headers=accounts["alice"].headers)
    assert final.json()["status"] == "graded"
    assert final.json()["final_score"] == 2.0


def test_idempotency_key_returns_the_first_submission(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "A"}}
    headers = {**accounts["alice"].headers, "Idempotency-Key": "run-42"}
    first = client.post("/api/v1/submissions", json=body, headers=headers)
    again = client.post("/api/v1/submissions", json=body, headers=headers)
    assert first.json()["id"] == again.json()["id"]
    other = client.post("/api/v1/submissions", json={**body, "answers": {"b1": "B"}}, headers=headers)
    assert other.status_code == 409
    listed = client.get("/api/v1/submissions", headers=accounts["alice"].headers).json()
    assert len(listed) == 1


def test_attempts_count_up(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    for expected in (1, 2, 3):
        resp = submit(client, accounts["alice"], {"problem_set": "basic", "problem": "t2", "answers": {"b1": "C"}})
        assert resp.json()["attempt"] == expected


def test_manual_problem_awaits_grading(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    resp = submit(
        client,
        accounts["alice"],
        {"problem_set": "basic", "problem": "t3", "answers": {"b1": "We held the data split equal."}},
        wait=10,
    )
    body = resp.json()
    assert body["verdict"] == "pending_manual"
    assert body["max_score"] == 3.0 and body["score"] == 0.0
    assert any("awaiting manual grading" in c["feedback"] for c in body["checks"])


@pytest.mark.parametrize(
    ("body", "status", "loc"),
    [
        ({"problem_set": "nope", "problem": "t1", "answers": {}}, 404, ["body", "problem_set"]),
        ({"problem_set": "basic", "problem": "q9", "answers": {}}, 422, ["body", "problem"]),
        ({"problem_set": "basic", "problem": "t1", "answers": {"b7": "x"}}, 422, ["body", "answers"]),
        ({"problem_set": "basic", "problem": "t1", "answers": {"b1": 3}}, 422, ["body", "answers", "b1"]),
        ({"problem_set": "basic", "problem": "t1"}, 422, ["body", "answers"]),
        ({"problem_set": "basic", "problem": "t1", "answers": {}, "extra": 1}, 422, ["body", "extra"]),
        ({"problem": "t1", "answers": {}}, 422, ["body", "problem_set"]),
    ],
)
def test_bad_input_names_the_field(client, accounts, basic_set, body, status, loc):  # type: ignore[no-untyped-def]
    resp = submit(client, accounts["alice"], body)
    assert resp.status_code == status, resp.text
    assert resp.json()["detail"][0]["loc"] == loc
    assert client.get("/api/v1/submissions", headers=accounts["alice"].headers).json() == []


def test_non_json_body_is_415(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    headers = {**accounts["alice"].headers, "content-type": "text/plain"}
    body = b'{"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}'
    assert client.post("/api/v1/submissions", content=body, headers=headers).status_code == 415
    assert client.get("/api/v1/submissions", headers=accounts["alice"].headers).json() == []


def test_idempotency_key_is_per_submission_not_per_problem(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    headers = {**accounts["alice"].headers, "Idempotency-Key": "k1"}
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    assert client.post("/api/v1/submissions", json=body, headers=headers).status_code == 202
    other_set = dict(body, problem_set="other")
    resp = client.post("/api/v1/submissions", json=other_set, headers=headers)
    assert resp.status_code == 409 and "Idempotency-Key" in resp.text  # never the first set's submission


def test_malformed_json_is_422_and_nothing_stored(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    headers = {**accounts["alice"].headers, "content-type": "application/json"}
    resp = client.post("/api/v1/submissions", content=b"{not json", headers=headers)
    assert resp.status_code == 422
    assert client.get("/api/v1/submissions", headers=accounts["alice"].headers).json() == []


def test_oversized_body_is_413(client, accounts, basic_set, settings):  # type: ignore[no-untyped-def]
    big = "x" * (settings.max_body_bytes + 10)
    resp = submit(client, accounts["alice"], {"problem_set": "basic", "problem": "t1", "answers": {"b1": big}})
    assert resp.status_code == 413
    assert client.get("/api/v1/submissions", headers=accounts["alice"].headers).json() == []


def test_students_see_only_their_own(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    resp = submit(client, accounts["alice"], {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}})
    sub_id = resp.json()["id"]
    assert client.get(f"/api/v1/submissions/{sub_id}", headers=accounts["bob"].headers).status_code == 404
    assert client.get("/api/v1/submissions", headers=accounts["bob"].headers).json() == []
    staff = client.get("/api/v1/submissions", headers=accounts["instructor"].headers).json()
    assert [s["id"] for s in staff] == [sub_id]
    assert client.get(f"/api/v1/submissions/{sub_id}", headers=accounts["instructor"].headers).status_code == 200
