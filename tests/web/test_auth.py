"""Logging in and out with the session cookie, the login redirect, and CSRF tokens on every form."""

from __future__ import annotations

from tests.web.conftest import csrf_of


def test_login_logout_round_trip(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    resp = client.get("/sets/basic", follow_redirects=False)
    assert resp.status_code == 303 and resp.headers["location"] == "/login?next=/sets/basic"

    page = client.get("/login?next=/sets/basic")
    bad = client.post("/login", data={"email": "alice@example.com", "password": "wrong-password", "next": "/sets/basic",
                                      "csrf_token": csrf_of(page.text)})  # fmt: skip
    assert bad.status_code == 400 and "Wrong email or password" in bad.text
    assert 'value="alice@example.com"' in bad.text  # the form comes back filled in

    good = client.post("/login", data={"email": "Alice@Example.com", "password": accounts["alice"].password,
                                       "next": "/sets/basic", "csrf_token": csrf_of(bad.text)},
                       follow_redirects=False)  # fmt: skip
    assert good.status_code == 303 and good.headers["location"] == "/sets/basic"
    home = client.get("/")
    assert home.status_code == 200 and "Basic test set" in home.text and "alice@example.com" in home.text

    out = client.post("/logout", data={"csrf_token": csrf_of(home.text)}, follow_redirects=False)
    assert out.status_code == 303
    assert client.get("/", follow_redirects=False).status_code == 303


def test_login_never_redirects_off_site(client, accounts):  # type: ignore[no-untyped-def]
    token = csrf_of(client.get("/login").text)
    # Browsers drop tabs and newlines in a Location: "/<tab>/evil.example" is "//evil.example" to them.
    for target in (
        "//evil.example/x",
        "https://evil.example/",
        "/\\evil.example",
        "/\t/evil.example",
        "/\n/evil.example",
    ):
        resp = client.post("/login", data={"email": "bob@example.com", "password": accounts["bob"].password,
                                           "next": target, "csrf_token": token}, follow_redirects=False)  # fmt: skip
        assert resp.headers["location"] == "/"
        token = csrf_of(client.get("/").text)
        client.post("/logout", data={"csrf_token": token})
        token = csrf_of(client.get("/login").text)


def test_posts_without_the_sessions_csrf_token_are_refused(as_alice, sessions):  # type: ignore[no-untyped-def]
    client, token = as_alice
    answers = {"answer.b1": "Encoder", "answer.b2": "32"}
    for sent in ({}, {"csrf_token": "forged"}, {"csrf_token": token + "x"}):
        resp = client.post("/sets/basic/problems/t1", data={**answers, **sent}, follow_redirects=False)
        assert resp.status_code == 403 and "expired" in resp.text
    assert client.get("/history").text.count("/submissions/") == 0  # nothing was stored
    # The login form has one too: a cross-site login (into the attacker's account) is refused.
    client.cookies.clear()
    resp = client.post("/login", data={"email": "bob@example.com", "password": "x" * 12}, follow_redirects=False)
    assert resp.status_code == 403
