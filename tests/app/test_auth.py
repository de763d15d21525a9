"""Authorization: login cookies, bearer tokens, scopes, revocation, roles."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select

from app.db import utcnow
from app.users.models import ApiToken

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie. Both
# backends: tokens and login sessions are looked up and written in the database.
pytestmark = pytest.mark.shared_app


def login(client, account) -> None:  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/auth/login", json={"email": account.email, "password": account.password})
    assert resp.status_code == 200, resp.text


def test_login_sets_a_cookie_that_authenticates(client, accounts):  # type: ignore[no-untyped-def]
    resp = client.post(
        "/api/v1/auth/login", json={"email": "ALICE@example.com", "password": accounts["alice"].password}
    )
    assert resp.status_code == 200 and resp.json()["role"] == "user"  # course roles are per offering
    assert client.get("/api/v1/auth/me").json()["email"] == "alice@example.com"
    client.post("/api/v1/auth/logout")
    assert client.get("/api/v1/auth/me").status_code == 401


def test_wrong_password_and_unknown_user_look_the_same(client, accounts):  # type: ignore[no-untyped-def]
    wrong = client.post("/api/v1/auth/login", json={"email": "alice@example.com", "password": "nope-nope"})
    unknown = client.post("/api/v1/auth/login", json={"email": "eve@example.com", "password": "nope-nope"})
    assert wrong.status_code == unknown.status_code == 401
    assert wrong.json()["detail"] == unknown.json()["detail"]  # request ids differ, of course


def test_no_credentials_is_401(client):  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/problem-sets").status_code == 401
    assert client.get("/api/v1/problem-sets", headers={"Authorization": "Bearer agt_bogus"}).status_code == 401
    assert client.get("/api/v1/problem-sets", headers={"Authorization": "Basic abc"}).status_code == 401


def test_tokens_are_stored_hashed_and_record_last_use(client, accounts, sessions):  # type: ignore[no-untyped-def]
    assert client.get("/api/v1/auth/me", headers=accounts["alice"].headers).status_code == 200
    with sessions() as session:
        rows = session.scalars(select(ApiToken)).all()
        for row in rows:
            assert row.token_hash not in {a.token for a in accounts.values()}
            assert len(row.prefix) == 12
        alice = next(r for r in rows if r.user_id == accounts["alice"].id)
        assert alice.last_used_at is not None


def test_revoked_token_stops_working(client, accounts):  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    created = client.post("/api/v1/tokens", json={"name": "ci"}).json()
    headers = {"Authorization": f"Bearer {created['token']}"}
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 200
    listed = client.get("/api/v1/tokens").json()
    assert listed and all("token" not in t for t in listed)
    assert client.delete(f"/api/v1/tokens/{created['id']}").status_code == 200
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 401


def test_tokens_cannot_mint_or_revoke_tokens(client, accounts):  # type: ignore[no-untyped-def]
    # A leaked token must not be able to widen its own scopes (e.g. an instructor's read-only CI token).
    for account in (accounts["alice"], accounts["instructor"]):
        minted = client.post("/api/v1/tokens", json={"scopes": ["submit", "read"]}, headers=account.headers)
        assert minted.status_code == 403
        assert client.get("/api/v1/tokens", headers=account.headers).status_code == 403


def test_students_cannot_revoke_others_tokens(client, accounts):  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    created = client.post("/api/v1/tokens", json={"name": "ci"}).json()
    client.post("/api/v1/auth/logout")
    login(client, accounts["bob"])
    assert client.delete(f"/api/v1/tokens/{created['id']}").status_code == 404


def test_read_only_token_cannot_submit(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    created = client.post("/api/v1/tokens", json={"scopes": ["read"]}).json()
    headers = {"Authorization": f"Bearer {created['token']}"}
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    assert client.post("/api/v1/submissions", json=body, headers=headers).status_code == 403
    assert client.get("/api/v1/problem-sets", headers=headers).status_code == 200


def test_submit_only_token_cannot_read_sets(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    created = client.post("/api/v1/tokens", json={"scopes": ["submit"]}).json()
    headers = {"Authorization": f"Bearer {created['token']}"}
    assert client.get("/api/v1/problem-sets", headers=headers).status_code == 403


def test_students_cannot_hold_instructor_scope(client, accounts):  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    assert client.post("/api/v1/tokens", json={"scopes": ["instructor"]}).status_code == 422


def test_instructor_token_without_instructor_scope_acts_as_a_student(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    alice_sub = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers).json()["id"]
    login(client, accounts["instructor"])
    plain = client.post("/api/v1/tokens", json={"scopes": ["submit", "read"]}).json()
    client.post("/api/v1/auth/logout")
    headers = {"Authorization": f"Bearer {plain['token']}"}
    assert client.get(f"/api/v1/submissions/{alice_sub}", headers=headers).status_code == 404
    assert client.get("/api/v1/submissions", headers=headers).json() == []
    files = {"file": ("set.zip", b"PK\x03\x04")}
    assert client.post("/api/v1/problem-sets", files=files, headers=headers).status_code == 403
    staff = accounts["instructor"].headers  # the fixture's token has the instructor scope
    assert client.get(f"/api/v1/submissions/{alice_sub}", headers=staff).status_code == 200


def test_student_upload_is_403(client, accounts):  # type: ignore[no-untyped-def]
    files = {"file": ("set.zip", b"PK\x03\x04", "application/zip")}
    assert client.post("/api/v1/problem-sets", files=files, headers=accounts["alice"].headers).status_code == 403


def test_cross_origin_cookie_post_is_refused(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    evil = client.post("/api/v1/submissions", json=body, headers={"Origin": "https://evil.example"})
    assert evil.status_code == 403
    same = client.post("/api/v1/submissions", json=body, headers={"Origin": "http://testserver"})
    assert same.status_code == 202


def test_student_view_hides_answers(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    view = client.get("/api/v1/problem-sets/basic", headers=accounts["alice"].headers).json()
    text = str(view).lower()
    # The fixture's aliases and reject cases appear nowhere in the view (its prompts do not contain them).
    for secret in ("encoder", "编码器", "decoder"):
        assert secret not in text
    assert not {"accept", "reject", "answers", "answer", "answer_bytes"} & _keys(view)
    for problem in view["problems"]:
        for part in problem["parts"]:
            assert set(part) <= {"id", "kind", "points", "hint", "widget", "options", "multi"}
    assert [p["id"] for p in view["problems"][0]["parts"]] == ["b1", "b2"]


def _keys(node: object) -> set[str]:
    """Every key of a JSON document, at any depth."""
    if isinstance(node, dict):
        return set(node) | {k for value in node.values() for k in _keys(value)}
    if isinstance(node, list):
        return {k for item in node for k in _keys(item)}
    return set()


def test_student_view_keeps_its_shape_and_is_documented(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    view = client.get("/api/v1/problem-sets/basic", headers=accounts["alice"].headers).json()
    t1, t2 = view["problems"][0], view["problems"][1]
    assert set(t1) == {"id", "title", "kind", "takes", "prompt", "points", "rubric", "parts"}
    assert t1["parts"][1] == {"id": "b2", "kind": "numeric", "points": 2.0, "hint": "number, e.g. 0.75 or 3^4",
                              "widget": "line"}  # fmt: skip
    assert t2["options"] == {"A": "one", "B": "two", "C": "three"} and t2["parts"][0]["multi"] is False
    assert view["due_at"] is None  # present, even when empty
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    assert {"ProblemSetView", "ProblemView", "PartView"} <= set(schemas)
    assert "hint" in schemas["PartView"]["properties"] and "takes" in schemas["ProblemView"]["properties"]


def test_last_use_is_written_once_a_minute_not_on_every_request(client, accounts, sessions):  # type: ignore[no-untyped-def]
    headers = accounts["alice"].headers
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 200
    with sessions() as session:
        token = next(t for t in session.scalars(select(ApiToken)) if t.user_id == accounts["alice"].id)
        first = token.last_used_at
        token.last_used_at = first - timedelta(seconds=30)  # used half a minute ago
        session.commit()
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 200
    with sessions() as session:
        token = next(t for t in session.scalars(select(ApiToken)) if t.user_id == accounts["alice"].id)
        assert token.last_used_at == first - timedelta(seconds=30)  # a read inside the minute writes nothing
        token.last_used_at = utcnow() - timedelta(minutes=5)
        session.commit()
    assert client.get("/api/v1/auth/me", headers=headers).status_code == 200
    with sessions() as session:
        token = next(t for t in session.scalars(select(ApiToken)) if t.user_id == accounts["alice"].id)
        assert token.last_used_at > utcnow() - timedelta(minutes=1)


def test_your_own_language_is_read_and_set_on_auth_me(client, accounts):  # type: ignore[no-untyped-def]
    alice = accounts["alice"]
    assert client.get("/api/v1/auth/me", headers=alice.headers).json()["locale"] is None  # follow the browser
    changed = client.patch("/api/v1/auth/me", json={"locale": "zh_CN"}, headers=alice.headers)
    assert changed.status_code == 200 and changed.json()["locale"] == "zh_CN"
    assert client.get("/api/v1/auth/me", headers=alice.headers).json()["locale"] == "zh_CN"
    assert client.get("/api/v1/auth/me", headers=accounts["bob"].headers).json()["locale"] is None  # only hers
    # An unknown code: 422 naming the field and the choices; nothing stored.
    for code in ("xx", "zh-CN", "EN", ""):
        refused = client.patch("/api/v1/auth/me", json={"locale": code}, headers=alice.headers)
        assert refused.status_code == 422, code
        (item,) = refused.json()["detail"]
        assert item["loc"] == ["body", "locale"] and "choose one of en, zh_CN, or null" in item["msg"], item
    assert client.patch("/api/v1/auth/me", json={"locale": "x" * 17}, headers=alice.headers).status_code == 422
    assert client.patch("/api/v1/auth/me", json={"role": "admin"}, headers=alice.headers).status_code == 422
    assert client.patch("/api/v1/auth/me", json={}, headers=alice.headers).json()["locale"] == "zh_CN"  # unchanged
    assert client.patch("/api/v1/auth/me", json={"locale": None}, headers=alice.headers).json()["locale"] is None
    # With the cookie (the pages' session), as with a token; from another site's page, refused.
    login(client, alice)
    assert client.patch("/api/v1/auth/me", json={"locale": "en"}).json()["locale"] == "en"
    cross = client.patch("/api/v1/auth/me", json={"locale": "zh_CN"}, headers={"Origin": "https://evil.example"})
    assert cross.status_code == 403 and client.get("/api/v1/auth/me").json()["locale"] == "en"
    client.post("/api/v1/auth/logout")
    assert client.patch("/api/v1/auth/me", json={"locale": "en"}).status_code == 401


def test_auth_me_is_declared_in_the_openapi_document(client):  # type: ignore[no-untyped-def]
    paths = client.get("/openapi.json").json()["paths"]
    patch = paths["/api/v1/auth/me"]["patch"]
    assert patch["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/UserUpdate")
    assert {"200", "401", "422"} <= set(patch["responses"])
