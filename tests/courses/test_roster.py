"""Roster CSV import (preview, apply in one transaction, bad rows, BOM, drop mode) and joining by code."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient

from app.courses import accounts
from app.db import utcnow
from app.users.models import Role
from tests.courses.conftest import World

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _import(client: TestClient, world: World, data: bytes, **params: str) -> object:
    return client.post(
        f"/api/v1/offerings/{world.b}/roster",
        params=params,
        files={"file": ("roster.csv", data, "text/csv")},
        headers=world.people["b:instructor"].headers,
    )


def _members(client: TestClient, world: World) -> dict[str, dict[str, object]]:
    resp = client.get(f"/api/v1/offerings/{world.b}/members", headers=world.people["b:instructor"].headers)
    return {m["email"]: m for m in resp.json()}


def test_preview_then_apply_with_a_bom_role_change_and_a_pending_email(client, world, sessions):  # type: ignore[no-untyped-def]
    data = (
        "\ufeffEmail,Name,Section,Role,Student_ID\r\n"
        "student-b@example.com,Stu Dent,S1,student,1001\r\n"
        "ta-b@example.com,,,instructor,\r\n"
        "new.person@example.com,New Person,S2,,2002\r\n"
    ).encode()
    before = _members(client, world)
    preview = _import(client, world, data)
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert body["applied"] is False
    assert [a["email"] for a in body["added"]] == ["new.person@example.com"]
    changes = {c["email"]: c["changes"] for c in body["changed"]}
    assert changes["ta-b@example.com"]["role"] == ["ta", "instructor"]
    assert changes["student-b@example.com"]["section"] == ["", "S1"]
    assert body["new_sections"] == ["S1", "S2"]  # unknown sections are flagged in the preview
    assert _members(client, world) == before  # a preview writes nothing

    applied = _import(client, world, data, apply="true").json()
    assert applied["applied"] is True
    after = _members(client, world)
    assert after["ta-b@example.com"]["role"] == "instructor"
    assert (
        after["student-b@example.com"]["student_id"] == "1001" and after["student-b@example.com"]["source"] == "manual"
    )
    pending = after["new.person@example.com"]
    assert pending["user_id"] is None and pending["status"] == "invited" and pending["source"] == "csv"
    # The first login of that email takes the row over.
    with sessions() as session:
        user, _ = accounts.create_user(session, email="New.Person@example.com", role=Role.STUDENT, enroll_default=False)
        session.commit()
        uid = user.id
    row = _members(client, world)["new.person@example.com"]
    assert row["user_id"] == uid and row["status"] == "active"


def test_bad_rows_are_all_reported_by_line_and_nothing_is_written(client, world):  # type: ignore[no-untyped-def]
    before = _members(client, world)
    data = b"email,role\nok@example.com,student\nnot-an-email,student\nok@example.com,ta\nx@example.com,professor\n"
    resp = _import(client, world, data, apply="true")
    assert resp.status_code == 422
    errors = resp.json()["errors"]
    assert [e["line"] for e in errors] == [3, 4, 5]
    assert "also on line 2" in errors[1]["msg"] and "unknown role" in errors[2]["msg"]
    assert _members(client, world) == before
    assert _import(client, world, b"name\nx\n").status_code == 422  # no email column
    assert _import(client, world, "email\ncaf\xe9@x.org\n".encode("latin-1")).status_code == 422  # not UTF-8


def test_drop_mode_drops_missing_students_but_never_staff(client, world):  # type: ignore[no-untyped-def]
    resp = _import(client, world, b"email\nsomeone.else@example.com\n", apply="true", drop_missing="true")
    assert resp.status_code == 200, resp.text
    assert resp.json()["dropped"] == ["student-b@example.com"]
    after = _members(client, world)
    assert after["student-b@example.com"]["status"] == "dropped"
    assert {after[f"{k}-b@example.com"]["status"] for k in ("instructor", "ta", "observer")} == {"active"}
    # A dropped student sees nothing of the offering any more.
    student = world.people["b:student"].headers
    assert client.get(f"/api/v1/offerings/{world.b}", headers=student).status_code == 404
    assert client.get(f"/api/v1/problem-sets/basic?offering={world.b}", headers=student).status_code == 404


def test_join_by_code_until_the_cut_off(client, world, sessions):  # type: ignore[no-untyped-def]
    with sessions() as session:
        accounts.create_user(
            session, email="walk-in@example.com", role=Role.STUDENT, password="walk-in-pass", enroll_default=False
        )
        session.commit()
    code = client.post(f"/api/v1/offerings/{world.b}/join-code", headers=world.people["b:instructor"].headers).json()
    assert code["join_enabled"] and code["join_url"].endswith(code["join_code"])
    walk_in = TestClient(client.app)
    assert (
        walk_in.post(
            "/api/v1/auth/login", json={"email": "walk-in@example.com", "password": "walk-in-pass"}
        ).status_code
        == 200
    )
    assert walk_in.post("/api/v1/join", json={"code": "WRONG"}).status_code == 404
    joined = walk_in.post("/api/v1/join", json={"code": code["join_code"].lower()})
    assert joined.status_code == 200 and joined.json()["source"] == "join_code", joined.text
    assert world.b in {o["id"] for o in walk_in.get("/api/v1/offerings").json()}
    # After the cut-off, and once switched off, nobody joins.
    past = (utcnow() - timedelta(minutes=1)).isoformat()
    client.patch(
        f"/api/v1/offerings/{world.b}", json={"self_join_until": past}, headers=world.people["b:instructor"].headers
    )
    late = TestClient(client.app)
    with sessions() as session:
        accounts.create_user(
            session, email="late@example.com", role=Role.STUDENT, password="late-pass-1", enroll_default=False
        )
        session.commit()
    assert (
        late.post("/api/v1/auth/login", json={"email": "late@example.com", "password": "late-pass-1"}).status_code
        == 200
    )
    assert late.post("/api/v1/join", json={"code": code["join_code"]}).status_code == 403
    client.patch(
        f"/api/v1/offerings/{world.b}",
        json={"join_enabled": False, "self_join_until": None},
        headers=world.people["b:instructor"].headers,
    )
    assert late.post("/api/v1/join", json={"code": code["join_code"]}).status_code == 404
