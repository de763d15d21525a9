"""An offering's webhooks: its instructors register endpoints that get every submission event of the offering,
signed per Standard Webhooks (verified by a real receiver on 127.0.0.1 with the `standardwebhooks` library), with
bodies sealed by the release policy as their owner sees them; nobody else may list, see or register them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.config import Settings
from app.courses import accounts
from app.courses import service as courses
from app.courses.models import MemberRole, Offering
from app.db import utcnow
from app.users import service as users
from app.webhooks.models import WebhookDelivery, WebhookEndpoint
from tests.courses.conftest import World
from tests.ops.receiver import Receiver, running_receiver
from tests.web.conftest import csrf_of, login

ANSWERS = {"b1": "encoder", "b2": "32"}
EVENTS = ["submission.graded", "submission.regraded", "grade.manual_updated"]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with running_receiver() as state:
        yield state


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={"webhook_allow_private": True, "webhook_retry_delays_s": [0.05] * 4, "webhook_poll_s": 0.05}
    )


def register(client: TestClient, world: World, who: str, offering: int, receiver: Receiver) -> dict[str, Any]:
    resp = client.post(
        f"/api/v1/offerings/{offering}/webhooks",
        json={"url": receiver.url, "events": EVENTS},
        headers=world.people[who].headers,
    )
    assert resp.status_code == 201, resp.text
    receiver.secret = resp.json()["secret"]
    assert receiver.secret.startswith("whsec_")
    return dict(resp.json())


def submit(client: TestClient, world: World, who: str) -> int:
    body = {"problem_set": "basic", "problem": "t1", "answers": ANSWERS}
    resp = client.post("/api/v1/submissions", params={"wait": 30}, json=body, headers=world.people[who].headers)
    assert resp.status_code in (200, 201, 202) and resp.json()["status"] == "graded", resp.text
    return int(resp.json()["id"])


def settled(client: TestClient, world: World, url: str, who: str = "a:instructor") -> list[dict[str, Any]]:
    """The delivery log once no delivery is pending (the last answer is recorded just after the receiver sent it)."""
    deadline = time.monotonic() + 30  # bounds a hung test; measures nothing
    while True:
        log: list[dict[str, Any]] = client.get(url, headers=world.people[who].headers).json()
        if all(d["status"] != "pending" for d in log) or time.monotonic() > deadline:
            return log
        time.sleep(0.02)


def test_the_offering_endpoint_gets_its_offering_events_signed_and_retried(  # type: ignore[no-untyped-def]
    client: TestClient, world: World, receiver: Receiver, sessions
) -> None:
    receiver.codes = [500, 200]
    endpoint = register(client, world, "a:instructor", world.a, receiver)
    # A submission of another offering (B's student, B's assignment of the same set) is not A's event.
    other = submit(client, world, "b:student")
    sub_id = submit(client, world, "a:alice")
    got = receiver.wait_for(2)
    assert all(r["verified"] for r in got) and len({r["headers"]["webhook-id"] for r in got}) == 1
    payload = got[-1]["payload"]
    assert payload["type"] == "submission.graded" and payload["data"]["id"] == sub_id
    # The body is what the instructor sees at GET /submissions/{id}.
    view = client.get(f"/api/v1/submissions/{sub_id}", headers=world.people["a:instructor"].headers).json()
    assert payload["data"]["checks"] == view["checks"] and payload["data"]["final_score"] == view["final_score"]
    base = f"/api/v1/offerings/{world.a}/webhooks/{endpoint['id']}"
    (delivery,) = settled(client, world, f"{base}/deliveries")
    assert delivery["status"] == "succeeded" and [a["status_code"] for a in delivery["attempt_log"]] == [500, 200]
    with sessions() as session:
        assert session.scalars(select(WebhookDelivery).where(WebhookDelivery.submission_id == other)).all() == []
    # A manual grade is announced too, and a redelivery sends the same id and body again.
    resp = client.post(
        f"/api/v1/submissions/{sub_id}/manual-grade",
        json={"manual_score": 0.0, "feedback": "ok"},
        headers=world.people["a:instructor"].headers,
    )
    assert resp.status_code == 200, resp.text
    third = receiver.wait_for(3)[2]
    assert third["verified"] and third["payload"]["type"] == "grade.manual_updated"
    again = client.post(f"{base}/deliveries/{delivery['id']}/redeliver", headers=world.people["a:instructor"].headers)
    assert again.status_code == 202, again.text
    fourth = receiver.wait_for(4)[3]
    assert fourth["verified"] and fourth["headers"]["webhook-id"] == delivery["message_id"]
    assert fourth["payload"] == payload
    # Listed under the offering without its secret; not among the instructor's personal endpoints.
    listed = client.get(f"/api/v1/offerings/{world.a}/webhooks", headers=world.people["a:instructor"].headers)
    assert [e["id"] for e in listed.json()] == [endpoint["id"]] and receiver.secret not in listed.text
    mine = client.get("/api/v1/webhooks", headers=world.people["a:instructor"].headers).json()
    assert endpoint["id"] not in [e["id"] for e in mine]
    personal = client.get(f"/api/v1/webhooks/{endpoint['id']}/deliveries", headers=world.people["a:instructor"].headers)
    assert personal.status_code == 404
    with sessions() as session:  # stored as the personal endpoints' secrets are: on the row, to sign with
        assert session.get(WebhookEndpoint, endpoint["id"]).secret == receiver.secret  # type: ignore[union-attr]


# (who, expected status): a role in offering A that is not instructor is a 403; no role in A is a 404; A's own
# instructor with a token lacking the 'instructor' scope acts as a student there (403).
OUTSIDERS = [("a:ta", 403), ("a:observer", 403), ("a:alice", 403), ("b:instructor", 404), ("b:ta", 404)]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the backends are covered by the first test
def test_only_the_offerings_instructors_reach_its_webhooks(  # type: ignore[no-untyped-def]
    client: TestClient, world: World, receiver: Receiver, sessions
) -> None:
    endpoint = register(client, world, "a:instructor", world.a, receiver)
    ping = client.post(
        f"/api/v1/offerings/{world.a}/webhooks/{endpoint['id']}/ping", headers=world.people["a:instructor"].headers
    )
    assert ping.status_code == 202
    with sessions() as session:
        owner = users.get_user(session, world.people["a:instructor"].id)
        _, unscoped = accounts.create_token(session, user=owner, name="ci", scopes=["submit", "read"])
        session.commit()
    callers = [(who, world.people[who].headers, status) for who, status in OUTSIDERS]
    callers.append(("a:instructor without the instructor scope", {"Authorization": f"Bearer {unscoped}"}, 403))
    base = f"/api/v1/offerings/{world.a}/webhooks"
    for who, headers, status in callers:
        attempts = [
            client.post(base, json={"url": receiver.url, "events": EVENTS}, headers=headers),
            client.get(base, headers=headers),
            client.get(f"{base}/{endpoint['id']}/deliveries", headers=headers),
            client.post(f"{base}/{endpoint['id']}/ping", headers=headers),
            client.post(f"{base}/{endpoint['id']}/deliveries/{ping.json()['id']}/redeliver", headers=headers),
            client.delete(f"{base}/{endpoint['id']}", headers=headers),
        ]
        for resp in attempts:
            assert resp.status_code == status, (who, resp.request.method, resp.request.url, resp.text)
            assert receiver.secret not in resp.text and "whsec_" not in resp.text
    # B's instructor has an offering of their own: A's endpoint is not reachable through it either.
    b_head = world.people["b:instructor"].headers
    cross = client.get(f"/api/v1/offerings/{world.b}/webhooks/{endpoint['id']}/deliveries", headers=b_head)
    assert cross.status_code == 404
    listed = client.get(base, headers=world.people["a:instructor"].headers).json()
    assert [e["id"] for e in listed] == [endpoint["id"]]  # nothing registered, nothing deleted


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the backends are covered by the first test
def test_bodies_are_sealed_by_the_release_policy_as_each_owner_sees_them(  # type: ignore[no-untyped-def]
    client: TestClient, world: World, receiver: Receiver
) -> None:
    """Scores released after the due date: the offering's endpoint (an instructor's view) has them, alice's own
    endpoint has what alice sees now (no scores), each equal to its owner's GET /submissions/{id}."""
    instructor, alice = world.people["a:instructor"], world.people["a:alice"]
    due = (utcnow() + timedelta(days=2)).isoformat()
    resp = client.patch(
        f"/api/v1/assignments/{world.assignment_a}",
        json={"due_at": due, "release_scores": "after_due", "release_feedback": "after_due"},
        headers=instructor.headers,
    )
    assert resp.status_code == 200, resp.text
    register(client, world, "a:instructor", world.a, receiver)
    staff_secret = receiver.secret
    with running_receiver() as own:
        mine = client.post("/api/v1/webhooks", json={"url": own.url, "events": EVENTS}, headers=alice.headers)
        assert mine.status_code == 201, mine.text
        own.secret = mine.json()["secret"]
        sub_id = submit(client, world, "a:alice")
        (staff_got,) = receiver.wait_for(1)
        (own_got,) = own.wait_for(1)
    assert staff_got["verified"] and own_got["verified"] and staff_secret != own.secret
    staff_view = client.get(f"/api/v1/submissions/{sub_id}", headers=instructor.headers).json()
    alice_view = client.get(f"/api/v1/submissions/{sub_id}", headers=alice.headers).json()
    assert staff_view["final_score"] == 3.0 and alice_view["final_score"] is None
    assert staff_got["payload"]["data"]["final_score"] == 3.0
    assert own_got["payload"]["data"]["final_score"] is None
    assert own_got["payload"]["data"]["checks"] == alice_view["checks"]
    assert staff_got["payload"]["data"]["checks"] == staff_view["checks"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the backends are covered by the first test
def test_an_owner_who_leaves_the_offering_stops_its_endpoint(  # type: ignore[no-untyped-def]
    client: TestClient, world: World, receiver: Receiver, sessions
) -> None:
    """B's instructor is made an instructor of A, registers an endpoint in A, then is dropped from A: A's events no
    longer go out on that endpoint (its owner could no longer read them); it is disabled, with the reason."""
    a_head, b_head = world.people["a:instructor"], world.people["b:instructor"]
    # Made by the operator: A's instructor's own entry for an existing account would wait for its acceptance.
    with sessions() as session:
        added = courses.enroll(session, offering=session.get(Offering, world.a), email=b_head.email,
                               role=MemberRole.INSTRUCTOR)  # fmt: skip
        session.commit()
        added_id = added.id
    endpoint = register(client, world, "b:instructor", world.a, receiver)
    dropped = client.patch(
        f"/api/v1/offerings/{world.a}/members/{added_id}", json={"status": "dropped"}, headers=a_head.headers
    )
    assert dropped.status_code == 200, dropped.text
    submit(client, world, "a:alice")
    url = f"/api/v1/offerings/{world.a}/webhooks/{endpoint['id']}/deliveries"
    (delivery,) = settled(client, world, url)
    assert delivery["status"] == "abandoned" and delivery["attempts"] == 0
    (listed,) = client.get(f"/api/v1/offerings/{world.a}/webhooks", headers=a_head.headers).json()
    assert listed["is_active"] is False and "no longer manages" in listed["disabled_reason"]
    assert receiver.received == []


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the backends are covered by the first test
def test_the_webhooks_page(client: TestClient, world: World, receiver: Receiver) -> None:  # type: ignore[no-untyped-def]
    teacher = TestClient(client.app)
    token = login(teacher, world.people["a:instructor"])
    home = teacher.get(f"/offerings/{world.a}")
    assert f'href="/offerings/{world.a}/webhooks"' in home.text
    page = teacher.get(f"/offerings/{world.a}/webhooks")
    assert page.status_code == 200 and "<h1>Webhooks</h1>" in page.text
    bad = teacher.post(
        f"/offerings/{world.a}/webhooks", data={"csrf_token": token, "url": "ftp://x/hook", "events": EVENTS}
    )
    assert bad.status_code == 422 and "http://" in bad.text
    form = {"csrf_token": token, "url": receiver.url, "events": EVENTS}
    made = teacher.post(f"/offerings/{world.a}/webhooks", data=form)
    assert made.status_code == 201, made.text[-800:]
    secret = made.text.split('<code id="webhook-secret">')[1].split("</code>")[0]
    assert secret.startswith("whsec_")
    receiver.secret = secret
    page = teacher.get(f"/offerings/{world.a}/webhooks")
    assert secret not in page.text and receiver.url in page.text  # shown once
    endpoint_id = int(page.text.split('id="endpoint-')[1].split('"')[0])
    pinged = teacher.post(
        f"/offerings/{world.a}/webhooks/{endpoint_id}/ping",
        data={"csrf_token": csrf_of(page.text)},
        follow_redirects=False,
    )
    assert pinged.status_code == 303
    (got,) = receiver.wait_for(1)
    assert got["verified"] and got["payload"]["type"] == "webhook.ping"
    page = teacher.get(f"/offerings/{world.a}/webhooks")
    assert "webhook.ping" in page.text and got["headers"]["webhook-id"] in page.text
    redeliver = page.text.split('action="')[-1].split('"')[0]
    assert redeliver.endswith("/redeliver")
    again = teacher.post(redeliver, data={"csrf_token": csrf_of(page.text)}, follow_redirects=False)
    assert again.status_code == 303
    second = receiver.wait_for(2)[1]
    assert second["verified"] and second["headers"]["webhook-id"] == got["headers"]["webhook-id"]
    # Without the csrf token nothing is registered.
    forged = teacher.post(f"/offerings/{world.a}/webhooks", data={"url": receiver.url, "events": EVENTS})
    assert forged.status_code in (400, 403)
    # A TA of A gets a refusal page, B's instructor a not-found page; neither sees the secret or the URL.
    for who, status in (("a:ta", 403), ("b:instructor", 404)):
        other = TestClient(client.app)
        login(other, world.people[who])
        refused = other.get(f"/offerings/{world.a}/webhooks")
        assert refused.status_code == status and receiver.url not in refused.text
    deleted = teacher.post(
        f"/offerings/{world.a}/webhooks/{endpoint_id}/delete", data={"csrf_token": csrf_of(page.text)},
        follow_redirects=False,
    )  # fmt: skip
    assert deleted.status_code == 303 and receiver.url not in teacher.get(f"/offerings/{world.a}/webhooks").text
    assert json.dumps(receiver.received[0]["payload"])  # the receiver parsed a JSON body
