"""Fill-in answers are graded in the request's thread (app/worker/inline.py): graded first, then stored already
graded in one transaction (never queued, so graded once), and stored queued for the workers, with their retry
accounting, whenever the request cannot grade them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.config import Settings
from app.courses import course_sets
from app.courses.access import access_for
from app.main import create_app
from app.submissions import service
from app.submissions.models import CheckResultRow, Grade, Status, Submission
from app.users.models import User
from app.worker.claims import claim_next
from app.worker.code_grader import LazyCodeGrader
from app.worker.grading import GradingJob
from app.worker.inline import InlineGrader
from tests.conftest import FIXTURE_SETS


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # Bursts of 40 answers from one token: the per-token rate limit (tests/ops) is not what these tests are about.
    return settings.model_copy(update={"rate_limits": False})


BODY = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder", "b2": "32"}}


def _row(sessions, sub_id: int) -> Submission:  # type: ignore[no-untyped-def]
    with sessions() as session:
        sub = session.get(Submission, sub_id)
        assert sub is not None
        session.expunge(sub)
        return sub


def _counts(sessions, sub_id: int) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        checks = session.scalar(select(func.count()).where(CheckResultRow.submission_id == sub_id))
        grades = session.scalar(select(func.count()).where(Grade.submission_id == sub_id))
        return int(checks or 0), int(grades or 0)


def test_a_fill_in_answer_is_graded_in_the_request_without_a_worker(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/submissions", json=BODY, headers=accounts["alice"].headers)  # no ?wait
    body = resp.json()
    assert resp.status_code == 202 and resp.headers["Location"] == f"/api/v1/submissions/{body['id']}"
    assert body["status"] == "graded" and body["final_score"] == body["max_score"] == 3.0
    assert [c["passed"] for c in body["checks"]] == [True, True]
    row = _row(sessions, body["id"])
    # Never claimed: no worker id, no lease, no attempt counted.
    assert row.claimed_by is None and row.lease_until is None and row.grading_attempts == 0
    assert row.started_at is not None and row.graded_at is not None
    assert _counts(sessions, body["id"]) == (2, 1)
    # What the response showed is what a later read shows.
    again = client.get(f"/api/v1/submissions/{body['id']}", headers=accounts["alice"].headers).json()
    assert {k: again[k] for k in ("status", "score", "final_score", "checks")} == {
        k: body[k] for k in ("status", "score", "final_score", "checks")
    }


def test_with_inline_grading_off_the_workers_grade_it(settings, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    app = create_app(settings.model_copy(update={"grade_answers_inline": False}))
    with TestClient(app) as client:
        body = client.post(
            "/api/v1/submissions", json=BODY, params={"wait": 30}, headers=accounts["alice"].headers
        ).json()
    assert body["status"] == "graded" and body["final_score"] == 3.0
    assert (_row(sessions, body["id"]).claimed_by or "").endswith(":0")  # the embedded worker's slot 0


def test_concurrent_answers_are_each_graded_exactly_once(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    headers = accounts["alice"].headers

    def post(i: int) -> dict:  # type: ignore[type-arg]
        answers = {"b1": "encoder" if i % 2 else "decoder", "b2": "32"}
        return client.post("/api/v1/submissions", json={**BODY, "answers": answers}, params={"wait": 30},
                           headers=headers).json()  # fmt: skip

    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(post, range(40)))
    assert all(b["status"] == "graded" for b in bodies)
    assert sorted(b["final_score"] for b in bodies) == [2.0] * 20 + [3.0] * 20
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Grade)) == 40
        assert session.scalar(select(func.count()).select_from(CheckResultRow)) == 80


def test_an_answer_graded_in_the_request_is_never_queued(client, accounts, basic_set, settings, sessions):  # type: ignore[no-untyped-def]
    # The embedded workers stop first: whatever a claim finds below was left queued by the request.
    client.app.state.pool.stop()
    body = client.post("/api/v1/submissions", json=BODY, headers=accounts["alice"].headers).json()
    assert body["status"] == "graded"
    with sessions() as session:
        assert claim_next(session, worker="w:1:0", lease_s=60, max_attempts=3) is None
    row = _row(sessions, body["id"])
    assert row.status == Status.GRADED and row.claimed_by is None and _counts(sessions, body["id"]) == (2, 1)


def test_a_repeated_idempotency_key_is_stored_and_graded_once(client, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    headers = {**accounts["alice"].headers, "Idempotency-Key": "k-1"}
    first = client.post("/api/v1/submissions", json=BODY, headers=headers).json()
    again = client.post("/api/v1/submissions", json=BODY, params={"wait": 5}, headers=headers).json()
    assert first["id"] == again["id"] and again["status"] == "graded" and again["checks"] == first["checks"]
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Submission)) == 1
        assert session.scalar(select(func.count()).select_from(Grade)) == 1


def test_with_no_free_slot_the_answer_is_stored_queued_for_the_workers(settings, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    inline = InlineGrader(settings, GradingJob(settings, sessions, LazyCodeGrader(settings)), slots=0)
    with sessions() as session:
        alice = session.get(User, accounts["alice"].id)
        assert alice is not None
        access = access_for(session, alice)
        stored = service.store(session, settings=settings, user=alice, access=access, problem_set="basic",
                               problem_id="t1", answers=BODY["answers"], inline=inline)  # fmt: skip
        assert stored.created and not stored.graded
        sub_id = stored.submission.id
        assert claim_next(session, worker="w:1:0", lease_s=60, max_attempts=3) == sub_id  # not held: claimable now
    row = _row(sessions, sub_id)
    assert row.status == Status.RUNNING and row.claimed_by == "w:1:0" and _counts(sessions, sub_id) == (0, 0)


def test_a_code_submission_still_goes_to_the_workers(settings, accounts, sessions):  # type: ignore[no-untyped-def]
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        session.commit()
    inline = InlineGrader(settings, GradingJob(settings, sessions, LazyCodeGrader(settings)))
    with sessions() as session:
        alice = session.get(User, accounts["alice"].id)
        assert alice is not None
        code = "def add(a, b):\n    return a + b\n"
        stored = service.store(session, settings=settings, user=alice, access=access_for(session, alice),
                               problem_set="codeset", problem_id="c1", code=code, inline=inline)  # fmt: skip
        assert stored.created and not stored.graded
        sub_id = stored.submission.id
    assert _row(sessions, sub_id).status == Status.QUEUED and _counts(sessions, sub_id) == (0, 0)


def test_with_a_broker_answers_are_still_graded_in_the_request(settings, accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    # Scale-out: the API grades the answer itself, stored graded and never sent, so even a broker that is down
    # (nothing listens on port 1) delays nothing; the workers grade code only.
    scale_out = settings.model_copy(update={"broker_url": "redis://127.0.0.1:1/0", "workers": 0})
    with TestClient(create_app(scale_out)) as client:
        assert client.app.state.pool is None  # no embedded workers
        resp = client.post("/api/v1/submissions", json=BODY, headers=accounts["alice"].headers)
    body = resp.json()
    assert resp.status_code == 202 and body["status"] == "graded" and body["final_score"] == 3.0
    row = _row(sessions, body["id"])
    assert row.claimed_by is None and row.grading_attempts == 0 and _counts(sessions, body["id"]) == (2, 1)
    off = scale_out.model_copy(update={"grade_answers_inline": False})
    assert InlineGrader(off, GradingJob(off, sessions, LazyCodeGrader(off))).enabled is False
