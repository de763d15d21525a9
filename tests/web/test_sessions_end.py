"""Sessions end when they should: a copied session cookie stops working at logout and at a password change (the
server-side session row decides, not the signed cookie), a password change revokes the API tokens (or keeps them
when asked, and says which), and every response carries the security headers."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from app.db import utcnow
from app.users.models import ApiToken, LoginSession
from tests.web.conftest import login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app

COOKIE = "autograder_session"
NEW = "a-new-long-password"


def _copy(client: TestClient) -> TestClient:
    """Another browser holding a copy of ``client``'s session cookie (what a thief keeps)."""
    value = client.cookies.get(COOKIE)
    assert value
    thief = TestClient(client.app)
    thief.cookies.set(COOKIE, value)
    return thief


def _logged_in(http: TestClient) -> bool:
    page = http.get("/history", follow_redirects=False)
    api = http.get("/api/v1/auth/me")
    assert (page.status_code == 200) == (api.status_code == 200), (page.status_code, api.status_code)
    return page.status_code == 200


def test_a_copied_cookie_stops_working_at_logout(as_alice) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    thief = _copy(client)
    assert _logged_in(thief)  # the copy works as long as the session does
    out = client.post("/logout", data={"csrf_token": token}, follow_redirects=False)
    assert out.status_code == 303 and out.headers["location"] == "/login"
    assert not _logged_in(client)
    assert not _logged_in(thief)  # the attack: the copy kept from before the logout is replayed


def test_a_copied_cookie_stops_working_at_api_logout(client, accounts) -> None:  # type: ignore[no-untyped-def]
    alice = accounts["alice"]
    assert client.post("/api/v1/auth/login", json={"email": alice.email, "password": alice.password}).status_code == 200
    thief = _copy(client)
    assert thief.get("/api/v1/auth/me").json()["email"] == alice.email
    assert client.post("/api/v1/auth/logout").status_code == 204
    assert thief.get("/api/v1/auth/me").status_code == 401
    assert client.get("/api/v1/auth/me").status_code == 401


def test_logging_in_again_ends_the_session_the_browser_held(as_alice, accounts) -> None:  # type: ignore[no-untyped-def]
    client, _ = as_alice
    before = _copy(client)
    login(client, accounts["bob"])  # the same browser, another account (session fixation the other way round)
    assert not _logged_in(before)
    assert client.get("/api/v1/auth/me").json()["email"] == accounts["bob"].email


def test_an_expired_or_unknown_session_is_no_login(as_alice, sessions) -> None:  # type: ignore[no-untyped-def]
    client, _ = as_alice
    assert _logged_in(client)
    with sessions() as session:
        row = session.scalars(select(LoginSession)).one()
        row.expires_at = utcnow() - timedelta(seconds=1)
        session.commit()
    assert not _logged_in(client)
    with sessions() as session:  # a row that is gone (a restore from before the login): a signed cookie is not enough
        session.execute(LoginSession.__table__.update().values(expires_at=utcnow() + timedelta(days=1)))
        session.commit()
    assert _logged_in(client)
    with sessions() as session:
        session.execute(LoginSession.__table__.delete())
        session.commit()
    assert not _logged_in(client)


def test_each_use_moves_the_idle_expiry_on_to_the_minute(as_alice, sessions) -> None:  # type: ignore[no-untyped-def]
    client, _ = as_alice
    with sessions() as session:
        row = session.scalars(select(LoginSession)).one()
        lifetime = row.expires_at - row.last_seen_at
        stale = utcnow() - timedelta(minutes=5)
        row.last_seen_at, row.expires_at = stale, stale + lifetime
        session.commit()
    for path in ("/history", "/api/v1/auth/me"):  # a page (its own short write), the API (get_principal's commit)
        assert client.get(path).status_code == 200
        with sessions() as session:
            row = session.scalars(select(LoginSession)).one()
            assert row.last_seen_at > stale + timedelta(minutes=4)
            assert row.expires_at - row.last_seen_at == lifetime  # the same idle lifetime, from the last use
            row.last_seen_at, row.expires_at = stale, stale + lifetime
            session.commit()


def test_the_cookie_holds_only_a_key_whose_hash_is_stored(as_alice, sessions) -> None:  # type: ignore[no-untyped-def]
    import base64
    import hashlib
    import json

    client, _ = as_alice
    payload = client.cookies.get(COOKIE).split(".")[0]  # type: ignore[union-attr]
    data = json.loads(base64.b64decode(payload + "=" * (-len(payload) % 4)))
    assert "user_id" not in data and isinstance(data["sid"], str)
    with sessions() as session:
        row = session.scalars(select(LoginSession)).one()
        assert row.key_hash == hashlib.sha256(data["sid"].encode()).hexdigest() and data["sid"] not in row.key_hash


def _change(client: TestClient, token: str, current: str, **extra: str):  # type: ignore[no-untyped-def]
    form = {"current_password": current, "new_password": NEW, "new_password_again": NEW, "csrf_token": token}
    return client.post("/account/password", data={**form, **extra}, follow_redirects=False)


def test_a_password_change_ends_the_other_sessions_and_the_tokens(as_alice, accounts, sessions) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    alice = accounts["alice"]
    other = TestClient(client.app)  # another browser, logged in before the change
    login(other, alice)
    copied = _copy(other)
    mine = _copy(client)
    bearer = {"Authorization": f"Bearer {alice.token}"}
    assert client.get("/api/v1/auth/me", headers=bearer).status_code == 200
    with sessions() as session:  # an expired token and a revoked one are not counted as revoked now
        session.add(ApiToken(user_id=alice.id, name="old", prefix="agt_x", token_hash="0" * 64, scopes=["read"],
                             expires_at=utcnow() - timedelta(days=1)))  # fmt: skip
        session.commit()

    done = _change(client, token, alice.password)
    assert done.status_code == 303 and done.headers["location"] == "/account?changed=1&tokens_revoked=1"
    page = client.get(done.headers["location"]).text
    assert "Every other session of this account is logged out." in page and "API tokens revoked: 1." in page
    assert _logged_in(client) and _logged_in(mine)  # the session that changed it goes on
    assert not _logged_in(other) and not _logged_in(copied)
    assert client.get("/api/v1/auth/me", headers=bearer).status_code == 401  # the token ends too
    with sessions() as session:
        live = session.scalars(select(ApiToken).where(ApiToken.user_id == alice.id, ApiToken.revoked_at.is_(None)))
        assert [t.name for t in live] == ["old"]  # only the one that had expired already


def test_a_password_change_may_keep_the_tokens_and_says_so(as_alice, accounts) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    alice = accounts["alice"]
    other = TestClient(client.app)
    login(other, alice)
    done = _change(client, token, alice.password, keep_tokens="1")
    assert done.status_code == 303 and done.headers["location"] == "/account?changed=1"
    assert "Your API tokens keep working." in client.get(done.headers["location"]).text
    assert client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {alice.token}"}).status_code == 200
    assert not _logged_in(other)  # the other sessions end all the same


def test_the_account_page_offers_to_keep_the_tokens_unticked(as_alice) -> None:  # type: ignore[no-untyped-def]
    client, _ = as_alice
    page = client.get("/account").text
    assert '<input type="checkbox" name="keep_tokens" value="1">' in page  # not checked: revoking is the default
    assert "revokes your API tokens" in page


def test_pages_and_the_api_send_the_security_headers(client, accounts) -> None:  # type: ignore[no-untyped-def]
    for response in (
        client.get("/login"),
        client.get("/api/v1/auth/me"),  # a 401
        client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {accounts['alice'].token}"}),
        client.get("/static/app.js"),
        client.get("/no-such-page"),
    ):
        assert response.headers["x-content-type-options"] == "nosniff", response.url
        assert response.headers["referrer-policy"] == "strict-origin-when-cross-origin"
        policy = [d.strip() for d in response.headers["content-security-policy"].split(";")]
        assert "frame-ancestors 'self'" in policy and "form-action 'self'" in policy, policy
        assert "object-src 'none'" in policy and "base-uri 'self'" in policy and "script-src 'self'" in policy
    docs = client.get("/docs")  # FastAPI's docs start their CDN scripts inline: framing is refused all the same
    assert "script-src" not in docs.headers["content-security-policy"]
    assert "frame-ancestors 'self'" in docs.headers["content-security-policy"]


def test_no_page_runs_an_inline_script() -> None:
    """script-src 'self' refuses inline scripts: every template's <script> loads a file or is a JSON data block."""
    import re
    from pathlib import Path

    import app.web

    templates = Path(app.web.__file__).parent / "templates"
    for path in templates.rglob("*.html"):
        for tag in re.findall(r"<script\b[^>]*>", path.read_text()):
            assert "src=" in tag or 'type="application/json"' in tag, (path.name, tag)
        assert not re.search(r"\son[a-z]+=\"", path.read_text()), path.name  # no onclick= handlers either
