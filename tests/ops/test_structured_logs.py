"""One JSON log line per request and per grading job, read back from the real log output (app.logs)."""

from __future__ import annotations

import json
import logging

from tests.app.test_visibility_and_failures import wait_graded

ANSWERS = {"b1": "ANSWER-TEXT-4711", "b2": "32"}


def test_request_and_grading_job_lines(client, accounts, basic_set, log_lines) -> None:  # type: ignore[no-untyped-def]
    alice = accounts["alice"]
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    resp = client.post("/api/v1/submissions", json=body, headers=alice.headers)
    assert resp.status_code == 202
    sub_id, request_id = resp.json()["id"], resp.headers["x-request-id"]
    wait_graded(client, alice, sub_id)
    lines = log_lines()
    post = [ln for ln in lines if ln.get("event") == "http_request" and ln.get("request_id") == request_id]
    assert len(post) == 1, lines
    line = post[0]
    assert line["method"] == "POST" and line["route"] == "/api/v1/submissions" and line["status"] == 202
    assert line["user_id"] == alice.id and isinstance(line["token_id"], int)
    assert line["submission_id"] == sub_id and line["problem"] == "t1" and line["problem_set"] == basic_set
    assert line["duration_ms"] >= 0 and line["level"] == "info" and line["ts"].endswith("Z")
    # The reads name the route template and the submission from the path, each with its own request id.
    reads = [ln for ln in lines if ln.get("route") == "/api/v1/submissions/{submission_id}"]
    assert reads and all(r["submission_id"] == sub_id and r["request_id"] != request_id for r in reads)
    job = [ln for ln in lines if ln.get("event") == "grading_job" and ln.get("submission_id") == sub_id]
    assert len(job) == 1, lines
    assert job[0]["verdict"] == "partial" and job[0]["kind"] == "fill_in" and job[0]["problem"] == "t1"
    assert job[0]["score"] == 2.0 and job[0]["max_score"] == 3.0 and job[0]["duration_ms"] > 0


def test_no_secrets_or_student_input_in_the_log(client, accounts, basic_set, log_lines) -> None:  # type: ignore[no-untyped-def]
    alice = accounts["alice"]
    login = client.post("/api/v1/auth/login", json={"email": alice.email, "password": alice.password})
    assert login.status_code == 200
    wrong = client.post("/api/v1/auth/login", json={"email": alice.email, "password": "not-the-password-9"})
    assert wrong.status_code == 401
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    sub_id = client.post("/api/v1/submissions", json=body, headers=alice.headers).json()["id"]
    wait_graded(client, alice, sub_id)
    text = log_lines.path.read_text()  # type: ignore[attr-defined]
    assert "/api/v1/auth/login" in text and str(sub_id) in text  # the lines are there...
    cookie = login.cookies.get("autograder_session") or ""
    for secret in (alice.password, "not-the-password-9", alice.token, alice.token[4:], ANSWERS["b1"], cookie):
        assert secret and secret not in text  # ...and none of these


def test_a_hostile_string_stays_one_bounded_escaped_line(log_lines) -> None:  # type: ignore[no-untyped-def]
    forged = '\n{"level": "critical", "msg": "forged"}\r\n\x1b[31m\u202e'
    logging.getLogger("app.grading").warning(
        "sandbox said %s", forged + "y" * 50_000, extra={"fields": {"problem": forged + "z" * 5000}}
    )
    lines = log_lines()
    assert len(lines) == 1
    raw = log_lines.path.read_text()  # type: ignore[attr-defined]
    assert raw.count("\n") == 1 and raw.isascii() and "\x1b" not in raw
    assert lines[0]["level"] == "warning" and "forged" in lines[0]["msg"]
    assert len(lines[0]["msg"]) < 2100 and len(lines[0]["problem"]) < 300
    assert json.loads(raw)["problem"].startswith(forged)
