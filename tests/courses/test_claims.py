"""Accounts claim only what was proven (issue 22 item 2): an invitation activates its own membership, nothing else.

The attacks, as an instructor of offering B would try them against offering A: take over A's pending TA row by
inviting the same email into B and setting the password from the link B's instructor was handed (the takeover);
make the account first and wait for A to add the email later (the squatting), then join A by code or have it
re-activated. The legitimate paths beside them: a link the server mailed (it proves the address), an existing
account accepting an invitation logged in, an admin's roster entry, an admin-made account.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from app.courses import accounts as account_service
from app.main import create_app
from app.users.models import Role
from tests.courses.conftest import World
from tests.courses.test_invitations import LINK, SMTP_PASSWORD, SMTP_USER, MailServer, mail_server  # noqa: F401
from tests.web.conftest import csrf_of, login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app

NEWTA = "newta@x.test"


def _add(client: TestClient, world: World, offering: int, email: str, role: str = "student", who: str = "") -> Any:
    who = who or ("a:instructor" if offering == world.a else "b:instructor")
    resp = client.post(f"/api/v1/offerings/{offering}/members", json={"email": email, "role": role},
                       headers=world.people[who].headers)  # fmt: skip
    assert resp.status_code == 201, resp.text
    return resp.json()


def _members(client: TestClient, world: World, offering: int) -> dict[str, dict[str, Any]]:
    who = "a:instructor" if offering == world.a else "b:instructor"
    resp = client.get(f"/api/v1/offerings/{offering}/members", headers=world.people[who].headers)
    return {m["email"]: m for m in resp.json()}


def _link_path(client: TestClient, world: World, offering: int, member_id: int) -> str:
    who = "a:instructor" if offering == world.a else "b:instructor"
    resp = client.post(f"/api/v1/offerings/{offering}/members/{member_id}/invitation",
                       headers=world.people[who].headers)  # fmt: skip
    assert resp.status_code == 201, resp.text
    made = resp.json()
    assert made["mailed"] is False and made["link"]
    return str(made["link"][made["link"].index("/invite/") :])


def _set_password(http: TestClient, path: str, password: str) -> None:
    page = http.get(path)
    assert page.status_code == 200, page.text[-400:]
    done = http.post(path, data={"csrf_token": csrf_of(page.text), "password": password, "confirm": password})
    assert done.status_code == 200 and "Your password is set" in done.text, done.text[-400:]


def _logged_in(client: TestClient, email: str, password: str) -> TestClient:
    http = TestClient(client.app)
    csrf = csrf_of(http.get("/login").text)
    resp = http.post("/login", data={"email": email, "password": password, "csrf_token": csrf},
                     follow_redirects=False)  # fmt: skip
    assert resp.status_code == 303, resp.text[-300:]
    return http


def _offerings_of(http: TestClient) -> set[int]:
    resp = http.get("/api/v1/offerings")
    assert resp.status_code == 200, resp.text
    return {o["id"] for o in resp.json()}


def test_an_invitation_of_offering_b_does_not_take_over_offering_a_s_pending_ta_row(client, world) -> None:  # type: ignore[no-untyped-def]
    pending_ta = _add(client, world, world.a, NEWTA, role="ta")
    assert pending_ta["status"] == "invited" and pending_ta["user_id"] is None
    into_b = _add(client, world, world.b, NEWTA)
    # B's instructor never gets A's token: A's member is not theirs to invite.
    foreign = client.post(f"/api/v1/offerings/{world.a}/members/{pending_ta['id']}/invitation",
                          headers=world.people["b:instructor"].headers)  # fmt: skip
    assert foreign.status_code == 404
    _set_password(TestClient(client.app), _link_path(client, world, world.b, into_b["id"]), "squatter-pass")

    squatter = _logged_in(client, NEWTA, "squatter-pass")
    assert _offerings_of(squatter) == {world.b}  # a student of B, nothing in A
    assert squatter.get(f"/api/v1/offerings/{world.a}").status_code == 404
    assert squatter.get(f"/api/v1/offerings/{world.a}/members").status_code == 404
    assert squatter.get(f"/offerings/{world.a}/roster").status_code == 404
    row = _members(client, world, world.a)[NEWTA]
    assert row["status"] == "invited" and row["user_id"] is None and row["role"] == "ta"
    assert _members(client, world, world.b)[NEWTA]["status"] == "active"


def test_a_squatted_account_does_not_get_the_row_another_offering_adds_later(client, world) -> None:  # type: ignore[no-untyped-def]
    squat = "squat@x.test"
    into_b = _add(client, world, world.b, squat)
    _set_password(TestClient(client.app), _link_path(client, world, world.b, into_b["id"]), "squatter-pass")
    squatter = _logged_in(client, squat, "squatter-pass")

    # A adds the address later, by hand and by CSV (another address the squatter holds): both stay invited.
    later = _add(client, world, world.a, squat, role="ta")
    assert later["status"] == "invited" and later["user_id"] is None
    csv_b = _add(client, world, world.b, "squat2@x.test")
    _set_password(TestClient(client.app), _link_path(client, world, world.b, csv_b["id"]), "squatter-pass2")
    imported = client.post(f"/api/v1/offerings/{world.a}/roster", params={"apply": "true"},
                           files={"file": ("r.csv", b"email,role\nsquat2@x.test,ta\n", "text/csv")},
                           headers=world.people["a:instructor"].headers)  # fmt: skip
    assert imported.status_code == 200, imported.text
    rows = _members(client, world, world.a)
    assert {rows[e]["status"] for e in (squat, "squat2@x.test")} == {"invited"}
    assert {rows[e]["user_id"] for e in (squat, "squat2@x.test")} == {None}
    assert _offerings_of(squatter) == {world.b}
    assert _offerings_of(_logged_in(client, "squat2@x.test", "squatter-pass2")) == {world.b}

    # Nor does A's join code hand the row over, nor may A's instructor switch it on without an acceptance.
    code = client.post(f"/api/v1/offerings/{world.a}/join-code", headers=world.people["a:instructor"].headers).json()
    joined = squatter.post("/api/v1/join", json={"code": code["join_code"]})
    assert joined.status_code == 409, joined.text
    forced = client.patch(f"/api/v1/offerings/{world.a}/members/{later['id']}", json={"status": "active"},
                          headers=world.people["a:instructor"].headers)  # fmt: skip
    assert forced.status_code == 422
    assert _offerings_of(squatter) == {world.b}
    assert squatter.get(f"/api/v1/offerings/{world.a}").status_code == 404


def test_an_existing_account_accepts_an_invitation_logged_in_as_itself(client, world, accounts) -> None:  # type: ignore[no-untyped-def]
    alice = accounts["alice"]  # a student of A with an account
    row = _add(client, world, world.b, alice.email)
    assert row["status"] == "invited" and row["user_id"] is None  # not on her account before she says so
    path = _link_path(client, world, world.b, row["id"])

    anon = TestClient(client.app)
    page = anon.get(path)
    assert page.status_code == 200 and f"/login?next={path}" in page.text
    posted = anon.post(path, data={"csrf_token": csrf_of(anon.get("/login").text)}, follow_redirects=False)
    assert posted.status_code == 303 and posted.headers["location"] == f"/login?next={path}"
    bob = TestClient(client.app)
    login(bob, accounts["bob"])
    assert bob.get(path).status_code == 403  # someone else's session

    me = TestClient(client.app)
    login(me, alice)
    form = me.get(path)
    assert form.status_code == 200 and "Accept the invitation" in form.text
    accepted = me.post(path, data={"csrf_token": csrf_of(form.text)}, follow_redirects=False)
    assert accepted.status_code == 303 and accepted.headers["location"] == f"/offerings/{world.b}"
    assert world.b in _offerings_of(me)
    assert _members(client, world, world.b)[alice.email]["user_id"] == alice.id
    assert me.get(path).status_code == 410  # used up
    # Her password was never touched.
    assert _logged_in(client, alice.email, alice.password)


@pytest.mark.shared_app(False)  # its own app, with the mail server in its settings
def test_a_link_the_server_mailed_proves_the_address_and_activates_the_other_rows(settings, world, mail_server) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    mailing = settings.model_copy(
        update={"smtp_host": "127.0.0.1", "smtp_port": mail_server.port, "smtp_starttls": False,
                "smtp_user": SMTP_USER, "smtp_password": SecretStr(SMTP_PASSWORD)}
    )  # fmt: skip
    with TestClient(create_app(mailing)) as client:
        _add(client, world, world.a, NEWTA, role="ta")
        into_b = _add(client, world, world.b, NEWTA)
        sent = client.post(f"/api/v1/offerings/{world.b}/members/{into_b['id']}/invitation",
                           headers=world.people["b:instructor"].headers).json()  # fmt: skip
        assert sent["mailed"] is True and sent["link"] is None  # B's instructor never sees it
        match = LINK.search(mail_server.messages[0].get_payload(decode=True).decode())  # type: ignore[union-attr]
        assert match
        _set_password(TestClient(client.app), match.group(1)[match.group(1).index("/invite/") :], "owner-pass")
        owner = _logged_in(client, NEWTA, "owner-pass")
        assert _offerings_of(owner) == {world.a, world.b}  # the mailbox's owner: A's TA row is theirs
        assert _members(client, world, world.a)[NEWTA]["status"] == "active"


def test_an_admin_s_entry_is_active_at_once_and_an_admin_made_account_takes_its_rows(client, world, sessions) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        admin, _ = account_service.create_user(session, email="root@example.com", role=Role.ADMIN)
        _, token = account_service.create_token(session, user=admin, name="t", scopes=["read", "submit", "instructor"])
        session.commit()
    headers = {"Authorization": f"Bearer {token}"}
    alice = world.people["a:alice"]
    resp = client.post(f"/api/v1/offerings/{world.b}/members", json={"email": alice.email}, headers=headers)
    assert resp.status_code == 201 and resp.json()["status"] == "active" and resp.json()["user_id"] == alice.id
    csv = client.post(f"/api/v1/offerings/{world.b}/roster", params={"apply": "true"}, headers=headers,
                      files={"file": ("r.csv", b"email\nbob@example.com\n", "text/csv")})  # fmt: skip
    assert csv.status_code == 200, csv.text
    assert _members(client, world, world.b)["bob@example.com"]["status"] == "active"

    _add(client, world, world.a, "later@x.test", role="ta")  # pending; then the operator makes the account
    with sessions() as session:
        made, _ = account_service.create_user(session, email="later@x.test", role=Role.STUDENT, enroll_default=False)
        session.commit()
    row = _members(client, world, world.a)["later@x.test"]
    assert row["status"] == "active" and row["user_id"] == made.id


def test_a_join_code_still_enrols_an_account_without_a_row(client, world, accounts) -> None:  # type: ignore[no-untyped-def]
    code = client.post(f"/api/v1/offerings/{world.b}/join-code", headers=world.people["b:instructor"].headers).json()
    bob = TestClient(client.app)
    login(bob, accounts["bob"])
    joined = bob.post("/api/v1/join", json={"code": code["join_code"]})
    assert joined.status_code == 200 and joined.json()["status"] == "active", joined.text
    assert world.b in _offerings_of(bob)
