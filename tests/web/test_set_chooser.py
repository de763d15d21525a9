"""A set assigned in two of a student's offerings, opened without ``?offering=``: a page to choose one (the API
answers 422 with the ids to pass). One offering opens the set as before; none is a 404."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from app.courses import accounts, clock
from app.courses import service as courses
from app.courses.models import Assignment, Offering
from app.users.models import Role
from tests.app.conftest import Account
from tests.courses.conftest import World, world  # noqa: F401
from tests.web.conftest import login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app

DUE_B = datetime(2031, 3, 4, 15, 30, tzinfo=UTC)  # 23:30 in Shanghai


def _alice_in_both(sessions, world: World) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """Alice (offering A) joins offering B too; B's set is timed and due, B's dates in Asia/Shanghai."""
    with sessions() as session:
        b = session.get(Offering, world.b)
        courses.enroll(session, offering=b, email="alice@example.com")
        b.time_zone = "Asia/Shanghai"
        assignment = session.get(Assignment, world.assignment_b)
        assignment.due_at, assignment.time_limit_min = DUE_B, 30
        session.commit()


def test_a_set_in_two_offerings_asks_which(client, world: World, sessions) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _alice_in_both(sessions, world)
    alice = world.people["a:alice"]
    login(client, alice)
    page = client.get("/sets/basic?from=card")
    assert page.status_code == 200, page.text
    assert "This set is assigned in more than one of your offerings: pick one." in page.text
    # One link per offering, the rest of the query kept, each with the course, the offering and its due date.
    for offering in (world.a, world.b):
        assert f'href="/sets/basic?from=card&amp;offering={offering}"' in page.text
    assert "Another course · Offering B" in page.text
    assert "2031-03-04 23:30 Asia/Shanghai" in page.text  # B's due date in B's zone (the browser told none)
    assert "no due date" in page.text  # A's
    assert 'name="answers' not in page.text and "<form" not in page.text.split("</header>")[-1]
    # The due date is shown in the viewer's zone once the browser said it.
    client.cookies.set("tz", "Europe/Paris")
    assert "2031-03-04 16:30 Europe/Paris" in client.get("/sets/basic").text

    # The timed one says so before it is opened (the link starts its clock); A's is not timed.
    assert page.text.count("minutes, starting when you open it") == 1
    # Choosing opens nothing: B's timed clock has not started; the chosen link opens the set and starts it.
    with sessions() as session:
        assert clock.started_at(session, session.get(Assignment, world.assignment_b), alice.id) is None
    chosen = client.get(f"/sets/basic?from=card&offering={world.b}")
    assert chosen.status_code == 200 and "pick one" not in chosen.text
    assert f'name="offering" value="{world.b}"' in chosen.text
    with sessions() as session:
        assert clock.started_at(session, session.get(Assignment, world.assignment_b), alice.id) is not None
    assert "starting when you open it" not in client.get("/sets/basic").text  # started: nothing to warn of


def test_the_api_names_the_offerings_to_pass(client, world: World, sessions) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    _alice_in_both(sessions, world)
    resp = client.get("/api/v1/problem-sets/basic", headers=world.people["a:alice"].headers)
    assert resp.status_code == 422, resp.text
    body = resp.json()
    assert body["offerings"] == sorted([world.a, world.b])
    assert str(sorted([world.a, world.b])) in body["detail"][0]["msg"] and body["detail"][0]["type"] == "invalid"
    chosen = client.get(
        "/api/v1/problem-sets/basic", params={"offering": world.b}, headers=world.people["a:alice"].headers
    )
    assert chosen.status_code == 200


def test_one_offering_opens_the_set_and_none_is_not_found(client, world: World, sessions) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    login(client, world.people["a:bob"])  # in A only
    page = client.get("/sets/basic")
    assert page.status_code == 200 and "pick one" not in page.text
    assert f'name="offering" value="{world.a}"' in page.text

    with sessions() as session:
        user, password = accounts.create_user(
            session, email="nobody@example.com", role=Role.STUDENT, enroll_default=False
        )
        session.commit()
    client.cookies.clear()
    login(client, Account(user.id, user.email, password, ""))
    assert client.get("/sets/basic").status_code == 404


def test_an_offering_not_yours_is_not_offered(client, world: World) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    """B's student is in B only: the set opens in B, and asking for A (where it is also assigned) is a 404."""
    login(client, world.people["b:student"])
    assert f'name="offering" value="{world.b}"' in client.get("/sets/basic").text
    assert client.get(f"/sets/basic?offering={world.a}").status_code == 404
