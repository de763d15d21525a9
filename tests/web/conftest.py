"""Web-page fixtures: the app fixtures, plus a browser-like login that keeps the session cookie and CSRF token."""

from __future__ import annotations

import re
import time

import pytest

from tests.app.conftest import accounts, basic_set, client  # noqa: F401

CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(html: str) -> str:
    match = CSRF.search(html)
    assert match, "no CSRF token on the page"
    return match.group(1)


def login(http, account) -> str:  # type: ignore[no-untyped-def]
    """Log in through the form; returns a CSRF token for the new session."""
    token = csrf_of(http.get("/login").text)
    resp = http.post("/login", data={"email": account.email, "password": account.password, "csrf_token": token},
                       follow_redirects=False)  # fmt: skip
    assert resp.status_code == 303, resp.text
    return csrf_of(http.get("/").text)


def wait_graded(http, sub_id: int) -> str:  # type: ignore[no-untyped-def]
    """Poll the submission page until grading is done (its script follows the grade meanwhile); returns its HTML."""
    deadline = time.monotonic() + 20
    while True:
        html = http.get(f"/submissions/{sub_id}").text
        if 'data-live="/submissions/' not in html or time.monotonic() > deadline:
            return html
        time.sleep(0.02)


@pytest.fixture
def as_alice(client, accounts, basic_set):  # type: ignore[no-untyped-def]  # noqa: F811
    return client, login(client, accounts["alice"])


@pytest.fixture
def as_instructor(client, accounts, basic_set):  # type: ignore[no-untyped-def]  # noqa: F811
    return client, login(client, accounts["instructor"])
