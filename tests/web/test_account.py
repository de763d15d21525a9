"""The account pages: change password (other sessions and the tokens end) and API tokens, with the attacks on each."""

from __future__ import annotations

import hashlib
import re

from fastapi.testclient import TestClient
from sqlalchemy import select

from app.users.models import ApiToken, User
from tests.web.conftest import csrf_of, login

NEW = "a-new-long-password"


def _password_hash(sessions, user_id: int) -> str:  # type: ignore[no-untyped-def]
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        return user.password_hash


def test_change_password_ends_the_other_sessions(as_alice, accounts, sessions):  # type: ignore[no-untyped-def]
    client, token = as_alice
    alice = accounts["alice"]
    other = TestClient(client.app)  # a second browser, logged in before the change
    login(other, alice)
    before = _password_hash(sessions, alice.id)

    page = client.get("/account")
    assert page.status_code == 200 and 'name="current_password"' in page.text and 'href="/account"' in page.text
    form = {"current_password": alice.password, "new_password": NEW, "new_password_again": NEW}
    for sent in ({}, {"csrf_token": "forged"}):  # CSRF: a cross-site form cannot change the password
        assert client.post("/account/password", data={**form, **sent}).status_code == 403
    for changes, message in (
        ({"current_password": "wrong-password"}, "the current password is wrong"),
        ({"new_password": "short", "new_password_again": "short"}, "at least 8 characters"),
        ({"new_password_again": NEW + "x"}, "the two new passwords differ"),
        ({"new_password": alice.password, "new_password_again": alice.password}, "is the current one"),
    ):
        resp = client.post("/account/password", data={**form, **changes, "csrf_token": token})
        assert resp.status_code == 422 and message in resp.text, message
    assert _password_hash(sessions, alice.id) == before  # nothing half-written

    done = client.post("/account/password", data={**form, "csrf_token": token}, follow_redirects=False)
    assert done.status_code == 303 and "Password changed" in client.get(done.headers["location"]).text
    assert client.get("/history").status_code == 200  # this session goes on
    assert other.get("/history", follow_redirects=False).status_code == 303  # the other one is logged out
    assert other.get("/api/v1/auth/me").status_code == 401
    assert other.get("/api/v1/auth/me", headers=alice.headers).status_code == 401  # its tokens are revoked too

    fresh = TestClient(client.app)
    page = fresh.get("/login").text
    old = fresh.post("/login", data={"email": alice.email, "password": alice.password, "csrf_token": csrf_of(page)})
    assert old.status_code == 400
    new = fresh.post("/login", data={"email": alice.email, "password": NEW, "csrf_token": csrf_of(page)},
                     follow_redirects=False)  # fmt: skip
    assert new.status_code == 303


def test_tokens_are_shown_once_stored_hashed_and_revoked(as_alice, accounts, sessions):  # type: ignore[no-untyped-def]
    client, token = as_alice
    form = {"name": "ci laptop", "scopes": ["read"], "offering": "", "expires_days": "30"}
    assert client.post("/account/tokens", data=form).status_code == 403  # no CSRF token: nothing created
    created = client.post("/account/tokens", data={**form, "csrf_token": token})
    assert created.status_code == 201 and "shown only this once" in created.text
    match = re.search(r'id="new-token" class="token-value" type="text" readonly value="(agt_[^"]+)"', created.text)
    assert match
    plain = match.group(1)

    with sessions() as session:
        row = session.scalar(select(ApiToken).where(ApiToken.name == "ci laptop"))
        assert row is not None and row.user_id == accounts["alice"].id and row.scopes == ["read"]
        assert row.token_hash == hashlib.sha256(plain.encode()).hexdigest()
        columns = [str(getattr(row, c.key)) for c in ApiToken.__table__.columns]
        assert not any(plain in value for value in columns)  # stored hashed, never the value
        assert row.expires_at is not None
        token_id = row.id
        bobs = session.scalar(select(ApiToken).where(ApiToken.user_id == accounts["bob"].id))
        assert bobs is not None
        bobs_id = bobs.id

    listing = client.get("/account/tokens").text
    assert "ci laptop" in listing and plain[:12] in listing and plain not in listing  # shown once only
    assert "never" in listing  # the new token's "last used"
    me = {"Authorization": f"Bearer {plain}"}
    assert client.get("/api/v1/auth/me", headers=me).json()["email"] == "alice@example.com"
    assert "instructor" not in listing.split("Create a token")[1]  # a student is not offered staff scopes

    refused = client.post("/account/tokens", data={**form, "scopes": ["instructor"], "csrf_token": token})
    assert refused.status_code == 422 and "only instructors and TAs" in refused.text
    bad_expiry = client.post("/account/tokens", data={**form, "expires_days": "9999", "csrf_token": token})
    assert bad_expiry.status_code == 422 and "not one of the choices" in bad_expiry.text

    # Another user's token id: 404, and it keeps working.
    other = client.post(f"/account/tokens/{bobs_id}/revoke", data={"csrf_token": token})
    assert other.status_code == 404
    assert client.get("/api/v1/auth/me", headers=accounts["bob"].headers).status_code == 200
    assert client.post(f"/account/tokens/{token_id}/revoke", data={}).status_code == 403  # CSRF
    assert client.get("/api/v1/auth/me", headers=me).status_code == 200

    gone = client.post(f"/account/tokens/{token_id}/revoke", data={"csrf_token": token}, follow_redirects=False)
    assert gone.status_code == 303 and gone.headers["location"] == "/account/tokens"
    assert client.get("/api/v1/auth/me", headers=me).status_code == 401
    assert "revoked" in client.get("/account/tokens").text
