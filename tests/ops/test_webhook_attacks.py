"""Attacks on webhooks: an endpoint registered with a token narrowed to one offering must never receive the events
(and bodies) of its owner's submissions in another offering, which that token cannot read."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.config import Settings
from app.courses import accounts
from app.courses import service as courses
from app.courses.models import Offering
from app.users import service as users
from app.webhooks.models import WebhookDelivery
from tests.courses.conftest import World

ANSWERS = {"b1": "encoder", "b2": "32"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # Deliveries to 127.0.0.1:9 are refused and retried: only which deliveries are queued counts here.
    return settings.model_copy(update={"webhook_allow_private": True})


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_token_narrowed_to_one_offering_gets_no_events_of_another(client: TestClient, world: World, sessions) -> None:  # type: ignore[no-untyped-def]
    alice = world.people["a:alice"]
    with sessions() as session:
        courses.enroll(session, offering=session.get(Offering, world.b), email=alice.email)
        _, narrowed = accounts.create_token(session, user=users.get_user(session, alice.id), name="b only",
                                         scopes=["read", "submit"], offering_id=world.b)  # fmt: skip
        session.commit()
    head = {"Authorization": f"Bearer {narrowed}"}
    made = client.post("/api/v1/webhooks", json={"url": "http://127.0.0.1:9/hook", "events": ["submission.graded"]},
                       headers=head)  # fmt: skip
    assert made.status_code == 201, made.text
    ids = {}
    for offering in (world.a, world.b):
        body = {"problem_set": "basic", "problem": "t1", "answers": ANSWERS, "offering": offering}
        resp = client.post("/api/v1/submissions", params={"wait": 30}, json=body, headers=alice.headers)
        assert resp.status_code in (200, 201, 202) and resp.json()["status"] == "graded", resp.text
        ids[offering] = resp.json()["id"]
    # The narrowed token cannot read the submission in A; its endpoint gets no event of it either.
    assert client.get(f"/api/v1/submissions/{ids[world.a]}", headers=head).status_code == 404
    with sessions() as session:
        queued = set(session.scalars(select(WebhookDelivery.submission_id)
                                     .where(WebhookDelivery.endpoint_id == made.json()["id"])))  # fmt: skip
    assert queued == {ids[world.b]}
