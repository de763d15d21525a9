"""Authorization: login cookies, bearer tokens, scopes, revocation, roles."""

from __future__ import annotations

from sqlalchemy import select

from app.users.models import ApiToken


def test_login_sets_a_cookie_that_authenticates(client, accounts):  # type: ignore[no-untyped-def]
    resp = client.post(
        "/api/v1/auth/login", json={"email": "ALICE@example.com", "password": accounts["alice"].password}
    )
    assert resp.status_code == 200 and resp.json()["role"] == "student"
    assert client.get("/api/v1/auth/me").json()["email"] == "alice@example.com"
    client.post("/api/v1/auth/logout")
    assert client.get("/api/v1/auth/me").status_code == 401


def test_wrong_password_and_unknown_user_look_the_same(client, accounts):  # type: ignore[no-untyped-def]
    wrong = client.post("/api/v1/auth/login", json={"email": "alice@example.com", "password": "nope-nope"})
    unknown = client.post("/api/v1/auth/login", json={"email": "eve@example.com", "password": "nope-nope"})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json() == unknown.json()


def test_no_credentials_is_401(client):  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/problem-sets").status_code == 401
    assert client.get("/api/v1/problem-sets", headers={"Authorization": "Bearer agt_bogus"}).status_code == 401
    assert client.get("/api/v1/problem-sets", headers={"Authorization": "Basic abc"}).status_code == 401


def test_tokens_are_stored_hashed_and_record_last_use(client, accounts, sessions):  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/auth/me", headers=accounts["alice"].headers).status_code == 200
    with sessions() as session:
        rows = session.scalars(select(ApiToken)).all()
        assert all(accounts["alice"].token not in (r.token_hash, r.prefix) for r in rows)
        alice = next(r for r in rows if r.user_id == accounts["alice"].id)
        assert alice.last_used_at is not None


def test_revoked_token_stops_working(client, accounts):  # type: ignore[no-untyped-def]
    created = client.post("/api/v1/tokens", json={"name": "ci"}, headers=accounts["alice"].headers).json()
    headers = {"Authorization": f"Bearer {created['token']}"}
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 200
    listed = client.get("/api/v1/tokens", headers=accounts["alice"].headers).json()
    assert all("token" not in t for t in listed)
    assert client.delete(f"/api/v1/tokens/{created['id']}", headers=accounts["alice"].headers).status_code == 200
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 401


def test_students_cannot_revoke_others_tokens(client, accounts):  # type: ignore[no-untyped-def]
    created = client.post("/api/v1/tokens", json={"name": "ci"}, headers=accounts["alice"].headers).json()
    assert client.delete(f"/api/v1/tokens/{created['id']}", headers=accounts["bob"].headers).status_code == 404


def test_read_only_token_cannot_submit(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    created = client.post("/api/v1/tokens", json={"scopes": ["read"]}, headers=accounts["alice"].headers).json()
    headers = {"Authorization": f"Bearer {created['token']}"}
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    assert client.post("/api/v1/submissions", json=body, headers=headers).status_code == 403
    assert client.get("/api/v1/problem-sets", headers=headers).status_code == 200


def test_students_cannot_hold_instructor_scope(client, accounts):  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/tokens", json={"scopes": ["instructor"]}, headers=accounts["alice"].headers)
    assert resp.status_code == 422


def test_student_upload_is_403(client, accounts):  # type: ignore[no-untyped-def]
    files = {"file": ("set.zip", b"PK\x03\x04", "application/zip")}
    assert client.post("/api/v1/problem-sets", files=files, headers=accounts["alice"].headers).status_code == 403


def test_student_view_hides_answers(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    view = client.get("/api/v1/problem-sets/basic", headers=accounts["alice"].headers).json()
    text = str(view)
    assert "encoder" not in text.lower() or "prompt" in text  # aliases never appear outside the prompt
    for problem in view["problems"]:
        for part in problem["parts"]:
            assert set(part) <= {"id", "kind", "points", "options", "multi"}
    assert "accept" not in text and "answers" not in text
    assert [p["id"] for p in view["problems"][0]["parts"]] == ["b1", "b2"]
