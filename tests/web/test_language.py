"""The pages' language as an account setting: which choice wins, the account page's form, the switcher's writes."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event

from app.users.models import User
from tests.web.conftest import csrf_of, login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app

sqlite_only = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
EN = {"Accept-Language": "en-US,en;q=0.9"}


def stored(sessions, user_id: int) -> str | None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        return user.locale


def store(sessions, user_id: int, locale: str | None) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        user = session.get(User, user_id)
        assert user is not None
        user.locale = locale
        session.commit()


def lang_of(html: str) -> str:
    found = re.search(r'<html lang="([^"]+)">', html)
    assert found, "no <html lang>"
    return found.group(1)


def test_the_account_beats_the_cookie_which_beats_the_browser(client, accounts, basic_set, sessions) -> None:  # type: ignore[no-untyped-def]
    alice = accounts["alice"]
    # Anonymous: the cookie, else the browser's header.
    assert lang_of(client.get("/login", headers=ZH).text) == "zh-CN"
    client.cookies.set("lang", "en")
    assert lang_of(client.get("/login", headers=ZH).text) == "en"
    client.cookies.clear()
    # Logged in, nothing stored: the same.
    login(client, alice)
    assert lang_of(client.get("/history", headers=ZH).text) == "zh-CN"
    client.cookies.set("lang", "en")
    assert lang_of(client.get("/history", headers=ZH).text) == "en"
    # Stored on the account: it wins over both, on every page that knows the user (an error page too) ...
    store(sessions, alice.id, "zh_CN")
    history = client.get("/history", headers=EN).text
    assert lang_of(history) == "zh-CN" and "我的提交" in history
    missing = client.get("/submissions/999999", headers=EN)
    assert missing.status_code == 404 and lang_of(missing.text) == "zh-CN"
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}}
    sent = client.post("/api/v1/submissions", json=body, headers=alice.headers, params={"wait": 10}).json()
    live = client.get(f"/submissions/{sent['id']}/live", headers=EN).text  # the fragment the page swaps in
    assert "检查项" in live and "Checks" not in live
    store(sessions, alice.id, "en")
    client.cookies.set("lang", "zh_CN")
    assert lang_of(client.get("/history", headers=ZH).text) == "en"
    # ... and in another browser that has never chosen anything, once logged in.
    fresh = TestClient(client.app)
    assert lang_of(fresh.get("/login", headers=ZH).text) == "zh-CN"
    login(fresh, alice)
    assert lang_of(fresh.get("/", headers=ZH).text) == "en"
    # A stored value the pages do not know (a language taken out later) is ignored, not an error.
    store(sessions, alice.id, "xx")
    assert lang_of(fresh.get("/", headers=ZH).text) == "zh-CN"


@sqlite_only
def test_the_account_language_costs_no_query_of_its_own(client, accounts, basic_set, sessions) -> None:  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    store(sessions, accounts["alice"].id, "zh_CN")
    engine = client.app.state.session_factory.kw["bind"]
    statements: list[str] = []

    def seen(conn, cursor, statement, *args) -> None:  # type: ignore[no-untyped-def]
        statements.append(statement)

    event.listen(engine, "before_cursor_execute", seen)
    try:
        page = client.get("/history", headers=EN).text
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert lang_of(page) == "zh-CN"
    reads_of_user = [s for s in statements if re.search(r"\bFROM \"?user\"?\s", s)]
    assert len(reads_of_user) == 1, reads_of_user  # the login's own; the language comes with it


def test_the_account_page_saves_the_language(as_alice, accounts, sessions) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    alice = accounts["alice"]
    page = client.get("/account", headers=EN).text
    assert 'action="/account/language"' in page and re.search(r'name="locale" value="" checked>', page)
    assert "Follow the browser" in page and ">中文</span>" in page

    saved = client.post("/account/language", data={"locale": "zh_CN", "csrf_token": token}, follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == "/account?language=saved"
    assert "lang=zh_CN" in saved.headers["set-cookie"]  # this browser keeps it after logout too
    assert stored(sessions, alice.id) == "zh_CN"
    client.cookies.clear()  # the account alone decides now: without the cookie, the browser asking for English
    login(client, alice)
    shown = client.get("/account?language=saved", headers=EN).text
    assert lang_of(shown) == "zh-CN" and "已保存：无论在哪里登录" in shown and "以中文显示" in shown
    assert re.search(r'name="locale" value="zh_CN" checked>', shown)

    # "Follow the browser": nothing stored, and the switcher's old cookie is forgotten too.
    token = csrf_of(shown)
    client.get("/language/zh_CN", follow_redirects=False)  # the switcher's cookie, as the server sets it
    assert client.cookies.get("lang") == "zh_CN"
    back = client.post("/account/language", data={"locale": "", "csrf_token": token}, follow_redirects=False)
    assert back.status_code == 303 and stored(sessions, alice.id) is None
    assert 'lang=""' in back.headers["set-cookie"] and "Max-Age=0" in back.headers["set-cookie"]
    assert "lang" not in client.cookies
    follows = client.get(back.headers["location"], headers=EN).text
    assert lang_of(follows) == "en" and "Saved: the pages follow your browser" in follows

    # A value the form does not offer (a forged form): refused, said plainly, nothing stored.
    bad = client.post("/account/language", data={"locale": "xx", "csrf_token": token}, headers=EN)
    assert bad.status_code == 422 and "Choose one of the languages listed." in bad.text
    assert 'aria-describedby="language-error"' in bad.text
    assert stored(sessions, alice.id) is None
    # Without the session's CSRF token (another site's form): refused, nothing stored.
    for sent in ({}, {"csrf_token": "forged"}):
        assert client.post("/account/language", data={"locale": "zh_CN", **sent}).status_code == 403
    assert stored(sessions, alice.id) is None


def test_the_switcher_stores_the_choice_only_by_its_form(as_alice, accounts, sessions) -> None:  # type: ignore[no-untyped-def]
    client, token = as_alice
    alice = accounts["alice"]
    page = client.get("/history", headers=EN).text
    assert 'action="/language/zh_CN"' in page and 'href="/language/' not in page  # logged in: forms, no links

    chose = client.post("/language/zh_CN", data={"next": "/history", "csrf_token": token}, follow_redirects=False)
    assert chose.status_code == 303 and chose.headers["location"] == "/history"
    assert "lang=zh_CN" in chose.headers["set-cookie"] and stored(sessions, alice.id) == "zh_CN"
    away = client.post("/language/zh_CN", data={"next": "//evil.example/", "csrf_token": token}, follow_redirects=False)
    assert away.headers["location"] == "/"  # no open redirect
    unknown = client.post("/language/xx", data={"csrf_token": token}, follow_redirects=False)
    assert unknown.status_code == 404 and stored(sessions, alice.id) == "zh_CN"

    # The attack: another site's link or <img> makes the browser GET the switcher with our (SameSite=Lax) cookie.
    # It may set this browser's cookie, never the account: the pages stay as the user chose them.
    attack = client.get("/language/en", params={"next": "/"}, headers={"Sec-Fetch-Site": "cross-site"},
                        follow_redirects=False)  # fmt: skip
    assert attack.status_code == 303 and stored(sessions, alice.id) == "zh_CN"
    assert lang_of(client.get("/history", headers=EN).text) == "zh-CN"
    # Nor can another site's form post to the switcher without this session's token.
    for sent in ({}, {"csrf_token": "forged"}):
        assert client.post("/language/en", data={"next": "/", **sent}).status_code == 403
    assert stored(sessions, alice.id) == "zh_CN"

    # Logged out, the switcher is links again and writes only the cookie.
    logout = csrf_of(client.get("/history").text)
    client.post("/logout", data={"csrf_token": logout})
    anonymous = client.get("/login", headers=EN).text
    assert 'href="/language/zh_CN?next=/login"' in anonymous and 'action="/language/' not in anonymous
