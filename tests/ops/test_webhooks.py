"""Webhooks against a real receiver on 127.0.0.1 that verifies signatures with the `standardwebhooks` library."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.config import Settings
from app.courses.access import access_for
from app.db import utcnow
from app.main import create_app
from app.problemsets import storage
from app.problemsets.models import ProblemSetVersion
from app.submissions import service as submissions
from app.users.models import User
from app.webhooks import service as webhooks
from app.webhooks.models import WebhookDelivery
from app.webhooks.sender import WebhookSender
from app.webhooks.service import new_secret
from app.worker.claims import claim_next
from app.worker.code_grader import LazyCodeGrader
from app.worker.grading import GradingJob
from tests.ops.receiver import Receiver, running_receiver

ANSWERS = {"b1": "encoder", "b2": "32"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as state:
        yield state


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"webhook_allow_private": True, "webhook_retry_delays_s": [0.05] * 4, "webhook_poll_s": 0.05}
    )


def register(client, account, receiver: Receiver, events: list[str]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/webhooks", json={"url": receiver.url, "events": events}, headers=account.headers)
    assert resp.status_code == 201, resp.text
    endpoint = resp.json()
    assert endpoint["secret"].startswith("whsec_")
    receiver.secret = endpoint["secret"]
    return endpoint


def test_graded_event_is_retried_with_a_stable_id_and_a_valid_signature(client, accounts, basic_set, receiver) -> None:  # type: ignore[no-untyped-def]
    alice = accounts["alice"]
    receiver.codes = [500, 500, 200]
    endpoint = register(client, alice, receiver, ["submission.graded"])
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    sub_id = client.post("/api/v1/submissions", json=body, headers=alice.headers).json()["id"]
    got = receiver.wait_for(3)
    assert all(r["verified"] for r in got)
    assert len({r["headers"]["webhook-id"] for r in got}) == 1  # the receiver's idempotency key
    assert got[0]["headers"]["webhook-signature"].startswith("v1,")
    payload = got[-1]["payload"]
    assert payload["type"] == "submission.graded"
    # The body is what the submitter sees at GET /submissions/{id}.
    view = client.get(f"/api/v1/submissions/{sub_id}", headers=alice.headers).json()
    assert payload["data"]["id"] == sub_id and payload["data"]["checks"] == view["checks"]
    assert payload["data"]["final_score"] == view["final_score"] == 3.0
    log = client.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries", headers=alice.headers).json()
    deadline = time.monotonic() + 30  # the 200 is recorded just after the receiver answered it
    while log[0]["status"] != "succeeded" and time.monotonic() < deadline:
        time.sleep(0.02)
        log = client.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries", headers=alice.headers).json()
    (delivery,) = log
    assert delivery["status"] == "succeeded" and delivery["attempts"] == 3
    assert [a["status_code"] for a in delivery["attempt_log"]] == [500, 500, 200]
    assert delivery["message_id"] == got[0]["headers"]["webhook-id"]
    # Manual redelivery: the same id and body once more.
    again = client.post(
        f"/api/v1/webhooks/{endpoint['id']}/deliveries/{delivery['id']}/redeliver", headers=alice.headers
    )
    assert again.status_code == 202
    fourth = receiver.wait_for(4)[3]
    assert fourth["verified"] and fourth["headers"]["webhook-id"] == delivery["message_id"]
    assert fourth["payload"] == payload
    # The secret was shown once: never in a listing; another user cannot see the endpoint.
    listed = client.get("/api/v1/webhooks", headers=alice.headers).json()
    assert listed and "secret" not in listed[0] and receiver.secret not in json.dumps(listed)
    bob = accounts["bob"]
    assert client.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries", headers=bob.headers).status_code == 404


def test_a_forged_signature_does_not_verify(client, accounts, receiver) -> None:  # type: ignore[no-untyped-def]
    endpoint = register(client, accounts["alice"], receiver, ["submission.graded"])
    receiver.secret = new_secret()  # the receiver holds a different key: what an attacker without ours would sign
    assert client.post(f"/api/v1/webhooks/{endpoint['id']}/ping", headers=accounts["alice"].headers).status_code == 202
    (got,) = receiver.wait_for(1)
    assert got["verified"] is False


def test_410_disables_the_endpoint(client, accounts, basic_set, receiver, sessions) -> None:  # type: ignore[no-untyped-def]
    alice = accounts["alice"]
    receiver.codes = [410]
    endpoint = register(client, alice, receiver, ["submission.graded"])
    assert client.post(f"/api/v1/webhooks/{endpoint['id']}/ping", headers=alice.headers).status_code == 202
    receiver.wait_for(1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        listed = client.get("/api/v1/webhooks", headers=alice.headers).json()
        if not listed[0]["is_active"]:
            break
        time.sleep(0.02)
    assert listed[0]["is_active"] is False and "410" in listed[0]["disabled_reason"]
    # Later events are not queued for it.
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    sub_id = client.post("/api/v1/submissions", params={"wait": 30}, json=body, headers=alice.headers).json()["id"]
    with sessions() as session:
        assert session.scalars(select(WebhookDelivery).where(WebhookDelivery.submission_id == sub_id)).all() == []
    assert len(receiver.received) == 1


def test_retry_after_is_honoured(client, accounts, receiver, sessions) -> None:  # type: ignore[no-untyped-def]
    receiver.codes, receiver.headers = [503], {"Retry-After": "3600"}
    endpoint = register(client, accounts["alice"], receiver, ["submission.graded"])
    delivery_id = client.post(f"/api/v1/webhooks/{endpoint['id']}/ping", headers=accounts["alice"].headers).json()["id"]
    receiver.wait_for(1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with sessions() as session:
            delivery = session.get(WebhookDelivery, delivery_id)
            if delivery is not None and delivery.attempts == 1:
                break
        time.sleep(0.02)
    assert delivery is not None and delivery.status == "pending" and delivery.attempts == 1
    # The schedule says 50 ms; the receiver asked for an hour, and gets it.
    assert delivery.next_attempt_at is not None
    assert delivery.next_attempt_at > utcnow() + timedelta(seconds=3000)
    assert len(receiver.received) == 1


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://localhost/hook",
        "http://10.1.2.3/hook",
        "http://169.254.169.254/latest/meta-data",
        "http://[::1]/hook",
        "http://192.168.0.10/hook",
        "ftp://example.com/hook",
        "http://user:pw@example.com/hook",
    ],
)
def test_private_and_odd_targets_are_refused(settings: Settings, accounts, sessions, url: str) -> None:  # type: ignore[no-untyped-def]
    strict = settings.model_copy(update={"webhook_allow_private": False, "workers": 0})
    with TestClient(create_app(strict)) as client:
        body = {"url": url, "events": ["submission.graded"]}
        resp = client.post("/api/v1/webhooks", json=body, headers=accounts["alice"].headers)
        assert resp.status_code == 422, resp.text
        assert resp.json()["detail"][0]["loc"] == ["body", "url"]
        assert client.get("/api/v1/webhooks", headers=accounts["alice"].headers).json() == []


def test_unknown_events_are_refused(client, accounts, receiver) -> None:  # type: ignore[no-untyped-def]
    body = {"url": receiver.url, "events": ["submission.deleted"]}
    resp = client.post("/api/v1/webhooks", json=body, headers=accounts["alice"].headers)
    assert resp.status_code == 422 and resp.json()["detail"][0]["loc"] == ["body", "events"]


def test_regrade_and_manual_grade_events(client, accounts, basic_set, receiver) -> None:  # type: ignore[no-untyped-def]
    alice, instructor = accounts["alice"], accounts["instructor"]
    register(client, alice, receiver, ["submission.graded", "submission.regraded", "grade.manual_updated"])
    body = {"problem_set": basic_set, "problem": "t3", "answers": {"b1": "We held the split equal."}}
    sub = client.post("/api/v1/submissions", params={"wait": 30}, json=body, headers=alice.headers).json()
    assert sub["status"] == "graded"
    receiver.wait_for(1)
    assert client.post(f"/api/v1/submissions/{sub['id']}/regrade", headers=instructor.headers).status_code == 202
    receiver.wait_for(2)
    url = f"/api/v1/submissions/{sub['id']}/manual-grade"
    resp = client.post(url, json={"manual_score": 2.5, "feedback": "good"}, headers=instructor.headers)
    assert resp.status_code == 200
    got = receiver.wait_for(3)
    assert [r["payload"]["type"] for r in got] == ["submission.graded", "submission.regraded", "grade.manual_updated"]
    assert all(r["verified"] for r in got) and len({r["headers"]["webhook-id"] for r in got}) == 3
    assert got[2]["payload"]["data"]["manual_score"] == 2.5 and got[2]["payload"]["data"]["final_score"] == 2.5


def test_error_event_when_grading_fails_for_good(accounts, basic_set, settings, sessions, receiver) -> None:  # type: ignore[no-untyped-def]
    """The sender as a job on its own (run_once, no thread): the final internal error is announced."""
    settings = settings.model_copy(update={"max_grading_attempts": 1})
    with sessions() as session:
        alice = session.get(User, accounts["alice"].id)
        endpoint = webhooks.create_endpoint(
            session, settings=settings, user=alice, token_id=None, url=receiver.url, events=["submission.error"]
        )
        receiver.secret = endpoint.secret
        sub, _ = submissions.create(
            session,
            settings=settings,
            user=alice,
            access=access_for(session, alice),
            problem_set="basic",
            problem_id="t2",
            answers={"b1": "B"},
        )
        sub_id = sub.id
        session.execute(update(ProblemSetVersion).values(archive=b"not a tar.gz"))  # grading cannot run
        session.commit()
    storage._cache.clear()
    shutil.rmtree(settings.data_dir / "sets", ignore_errors=True)
    with sessions() as session:
        assert claim_next(session, worker="w:1:0", lease_s=60, max_attempts=1) == sub_id
    GradingJob(settings, sessions, LazyCodeGrader(settings)).run(sub_id, "w:1:0")
    sender = WebhookSender(settings, sessions)
    try:
        assert sender.run_once() == 1
    finally:
        sender.stop()
    (got,) = receiver.received
    assert got["verified"] and got["payload"]["type"] == "submission.error"
    assert got["payload"]["data"]["id"] == sub_id and got["payload"]["data"]["status"] == "error"
