"""A token narrowed to one offering, used on the endpoints added since: an instructor of A and B, holding a token
for B only, reaches nothing of A (404, as for an offering they have no role in) and still reaches B."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.courses import accounts
from app.courses import service as courses
from app.courses.models import MemberRole, Offering
from app.users import service as users
from app.users.models import Invitation
from app.webhooks.models import WebhookEndpoint
from tests.courses.conftest import World

HOOK = {"url": "https://ci.example.edu/hook", "events": ["submission.graded"]}


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # access checks, not storage
def test_a_token_narrowed_to_b_reaches_nothing_of_a(client: TestClient, world: World, sessions) -> None:  # type: ignore[no-untyped-def]
    teacher = world.people["a:instructor"]
    with sessions() as session:
        courses.enroll(session, offering=session.get(Offering, world.b), email=teacher.email,
                       role=MemberRole.INSTRUCTOR)  # fmt: skip
        newbie = courses.enroll(session, offering=session.get(Offering, world.a), email="newbie@example.com")
        _, narrowed = accounts.create_token(session, user=users.get_user(session, teacher.id), name="b only",
                                         scopes=["read", "instructor"], offering_id=world.b)  # fmt: skip
        session.commit()
        newbie_id = newbie.id
    head = {"Authorization": f"Bearer {narrowed}"}
    a, b = f"/api/v1/offerings/{world.a}", f"/api/v1/offerings/{world.b}"
    refused = [
        client.post(f"{a}/members/{newbie_id}/invitation", headers=head),
        client.get(f"{a}/webhooks", headers=head),
        client.post(f"{a}/webhooks", json=HOOK, headers=head),
        client.get(f"/api/v1/problem-sets/basic?offering={world.a}", headers=head),
        client.get(f"/api/v1/problem-sets/basic/problems/t1?offering={world.a}", headers=head),
        client.get(f"{a}/gradebook", headers=head),
    ]
    for resp in refused:
        assert resp.status_code == 404, (resp.request.method, resp.request.url, resp.text)
    assert client.get(f"{b}/webhooks", headers=head).status_code == 200
    assert client.get(f"{b}/gradebook", headers=head).status_code == 200
    with sessions() as session:  # nothing was written for A
        assert session.scalar(select(func.count()).select_from(Invitation)) == 0
        assert session.scalar(select(func.count()).select_from(WebhookEndpoint)) == 0
