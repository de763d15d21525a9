"""A launch in the LMS's iframe, over HTTP with the headers a browser sends there: the partitioned state and session
cookies, LTI platform storage for the OIDC state, /lti/arrive and its new window, and the forged posts each refuses.
The browser itself (Chromium, both cookie modes) is tests/browser/test_lti_frame.py."""

from __future__ import annotations

import re
from datetime import timedelta
from html import unescape
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from app.db import utcnow
from app.lti.models import LtiLaunchState
from app.users.models import LoginSession, User
from tests.lti import platform as lms
from tests.lti.conftest import TOOL, launch
from tests.lti.platform import canvas_claims

# One app per module and backend (tests/conftest.py), as in test_launch: the rows are deleted, the cookies dropped
# and the platform registered again before each test; the launch states and login sessions are database rows.
pytestmark = pytest.mark.shared_app

FRAME = {"sec-fetch-dest": "iframe", "sec-fetch-site": "cross-site"}
HTTPS = "https://testserver"  # a secure context: the cookies are partitioned there


def _field(page: str, name: str) -> str:
    found = re.search(rf'{name}="([^"]*)"', page)
    assert found, f"{name} not in the page"
    return unescape(found.group(1))


def _login(client: TestClient, platform: lms.TestPlatform, claims: dict[str, Any], *, base: str = TOOL,
           headers: dict[str, str] | None = None, target: str = "") -> httpx.Response:  # fmt: skip
    params = {"iss": platform.issuer, "login_hint": platform.expect_launch(claims), "client_id": platform.client_id,
              "target_link_uri": f"{TOOL}/lti/launch", "lti_deployment_id": platform.deployment_id}  # fmt: skip
    if target:
        params["lti_storage_target"] = target
    return client.get(f"{base}/lti/login", params=params, headers=headers or {}, follow_redirects=False)


def _platform_form(auth_url: str) -> tuple[str, str]:
    """The platform's auth page for our redirect: the id_token and state its form posts back."""
    page = httpx.get(auth_url, timeout=10).text
    return _field(page, 'name="id_token" value'), _field(page, 'name="state" value')


def _student(platform: lms.TestPlatform, sub: str = "s-1") -> dict[str, Any]:
    return canvas_claims(platform, sub=sub, role="Learner", link="rl-1", email=f"{sub}@uni.example")


@pytest.fixture
def linked(lti_client: TestClient, platform: lms.TestPlatform, basic_set: Any) -> str:
    """The instructor's first launch links the LMS course (a new offering with the basic set); its page's path."""
    teacher = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", custom={"problem_set": "basic"})
    target = launch(lti_client, platform, teacher).response.headers["location"]
    assert target.startswith("/sets/basic?offering=")
    lti_client.cookies.clear()  # the student's browser is another one
    return str(target)


def _users(sessions: Any) -> int:
    with sessions() as s:
        return int(s.scalar(select(func.count()).select_from(User)) or 0)


def _logins(sessions: Any) -> int:
    with sessions() as s:
        return int(s.scalar(select(func.count()).select_from(LoginSession)) or 0)


def test_the_state_cookie_is_partitioned_where_a_secure_cookie_is_kept(lti_client, platform) -> None:  # type: ignore[no-untyped-def]
    for base in (HTTPS, "http://127.0.0.1", "http://localhost"):
        cookie = _login(lti_client, platform, _student(platform), base=base).headers["set-cookie"].lower()
        assert "samesite=none" in cookie and "secure" in cookie and "partitioned" in cookie, (base, cookie)
    # Plain http on another host: a Secure cookie would be dropped, so the state cookie stays Lax (top-level only).
    cookie = _login(lti_client, platform, _student(platform)).headers["set-cookie"].lower()
    assert "samesite=lax" in cookie and "partitioned" not in cookie and "secure" not in cookie


def test_a_framed_login_offering_platform_storage_stores_the_state_there_first(lti_client, platform) -> None:  # type: ignore[no-untyped-def]
    answer = _login(lti_client, platform, _student(platform), base=HTTPS, headers=FRAME, target="_parent")
    assert answer.status_code == 200
    page = answer.text
    assert _field(page, "data-mode") == "put" and _field(page, "data-target") == "_parent"
    assert _field(page, "data-origin") == platform.base_url  # postMessage goes to the platform's origin only
    state = _field(page, "data-state")
    assert f"lti1p3-{state}={state}" in answer.headers["set-cookie"]  # the cookie too, in case storage fails
    auth = urlsplit(_field(page, "data-next"))
    assert f"{auth.scheme}://{auth.netloc}{auth.path}" == f"{platform.base_url}/auth" and f"state={state}" in auth.query
    assert (
        'src="/static/lti_storage.js"' in page
        and "frame-ancestors 'self' " + platform.base_url in (answer.headers["content-security-policy"])
    )


def test_a_framed_login_without_storage_checks_the_frame_keeps_a_cookie(lti_client, platform) -> None:  # type: ignore[no-untyped-def]
    page = _login(lti_client, platform, _student(platform), base=HTTPS, headers=FRAME).text
    assert _field(page, "data-mode") == "check" and _field(page, "data-secure") == "1"
    # The way out: the same login initiation in a new window (the hint is not spent: the platform was not asked).
    window = re.search(r'href="(/lti/login\?[^"]+)" target="_blank"', page)
    assert window, page
    assert "lti_storage_target" not in window.group(1) and "login_hint=hint-" in unescape(window.group(1))
    top = lti_client.get(unescape(window.group(1)), follow_redirects=False)
    assert top.status_code == 302 and top.headers["location"].startswith(f"{platform.base_url}/auth?")


def test_platform_storage_launch_checks_the_state_in_the_page_then_posts_from_this_site(
    lti_client, platform, sessions, linked
) -> None:  # type: ignore[no-untyped-def]
    answer = _login(lti_client, platform, _student(platform), base=HTTPS, headers=FRAME, target="_parent")
    id_token, state = _platform_form(_field(answer.text, "data-next"))
    lti_client.cookies.clear()  # the frame kept no cookie: only the platform's storage has the state
    users = _users(sessions)
    form = {"id_token": id_token, "state": state, "lti_storage_target": "_parent"}
    first = lti_client.post(f"{HTTPS}/lti/launch", data=form, headers=FRAME, follow_redirects=False)
    assert first.status_code == 200 and _field(first.text, "data-mode") == "get"
    assert _field(first.text, "data-state") == state and _field(first.text, "data-origin") == platform.base_url
    assert _users(sessions) == users  # nothing written before the state is checked

    again = {**form, "lti_storage_verified": "1"}
    ours = {"origin": HTTPS, "sec-fetch-site": "same-origin", "sec-fetch-dest": "iframe"}
    done = lti_client.post(f"{HTTPS}/lti/launch", data=again, headers=ours, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"].startswith("/lti/arrive?t=")
    assert "partitioned" in done.headers["set-cookie"].lower()
    landed = lti_client.get(f"{HTTPS}{done.headers['location']}", headers=FRAME, follow_redirects=False)
    assert landed.status_code == 303 and landed.headers["location"] == linked
    assert lti_client.get(f"{HTTPS}{linked}").status_code == 200
    # The id_token's nonce was used: the same post again is refused.
    replay = lti_client.post(f"{HTTPS}/lti/launch", data=again, headers=ours, follow_redirects=False)
    assert replay.status_code == 401


@pytest.mark.parametrize(
    "headers",
    [
        {},  # no Origin: a browser sends one with every POST, so this is no page of ours
        {"origin": "https://evil.example", "sec-fetch-site": "cross-site"},
        {"origin": HTTPS, "sec-fetch-site": "cross-site"},  # an Origin that lies is caught by Sec-Fetch-Site
        {"origin": "null"},
    ],
)
def test_attack_a_forged_storage_check_is_refused_with_nothing_written(
    lti_client, platform, sessions, linked, headers
) -> None:  # type: ignore[no-untyped-def]
    """Login CSRF: an attacker posts their own id_token and state to the victim's browser claiming the platform's
    storage confirmed them. Only our own page may say so."""
    answer = _login(lti_client, platform, _student(platform, "attacker"), base=HTTPS, target="_parent")
    id_token, state = _platform_form(_field(answer.text, "data-next"))
    lti_client.cookies.clear()
    users, logins = _users(sessions), _logins(sessions)
    form = {"id_token": id_token, "state": state, "lti_storage_target": "_parent", "lti_storage_verified": "1"}
    refused = lti_client.post(f"{HTTPS}/lti/launch", data=form, headers=headers, follow_redirects=False)
    assert refused.status_code == 401 and "did not come from this site" in refused.text
    assert (_users(sessions), _logins(sessions)) == (users, logins)


def test_a_framed_launch_lands_through_arrive_and_a_new_window_takes_it_over(lti_client, platform, linked) -> None:  # type: ignore[no-untyped-def]
    answer = _login(lti_client, platform, _student(platform), base=HTTPS, headers=FRAME)
    id_token, state = _platform_form(_field(answer.text, "data-next"))
    form = {"id_token": id_token, "state": state}
    done = lti_client.post(f"{HTTPS}/lti/launch", data=form, headers=FRAME, follow_redirects=False)
    arrive = done.headers["location"]
    assert done.status_code == 303 and arrive.startswith("/lti/arrive?t=")
    lti_client.cookies.clear()  # the browser dropped the session cookie in the frame
    page = lti_client.get(f"{HTTPS}{arrive}", headers=FRAME)
    assert page.status_code == 200 and 'action="/lti/arrive" target="_blank"' in page.text
    token = _field(page.text, 'name="t" value')
    assert lti_client.get(f"{HTTPS}{linked}", follow_redirects=False).status_code == 303  # not logged in here

    # The new window, opened by the page's form (our origin): logged in, on the same set.
    window = {"origin": HTTPS, "sec-fetch-site": "same-origin", "sec-fetch-dest": "document"}
    opened = lti_client.post(f"{HTTPS}/lti/arrive", data={"t": token}, headers=window, follow_redirects=False)
    assert opened.status_code == 303 and opened.headers["location"] == linked
    cookie = opened.headers["set-cookie"].lower()
    assert "samesite=lax" in cookie and "partitioned" not in cookie  # a first-party window: the usual cookie
    assert lti_client.get(f"{HTTPS}{linked}").status_code == 200
    # Once only.
    lti_client.cookies.clear()
    twice = lti_client.post(f"{HTTPS}/lti/arrive", data={"t": token}, headers=window, follow_redirects=False)
    assert twice.status_code == 401


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"origin": "https://evil.example", "sec-fetch-site": "cross-site"},
        {"origin": HTTPS, "sec-fetch-site": "same-site"},
    ],
)
def test_attack_a_new_window_token_posted_from_another_site_logs_nobody_in(
    lti_client, platform, sessions, linked, headers
) -> None:  # type: ignore[no-untyped-def]
    """Login CSRF with the attacker's own arrival token: another site's form cannot post it, and the token survives
    the refusal for its rightful window."""
    answer = _login(lti_client, platform, _student(platform, "attacker"), base=HTTPS, headers=FRAME)
    id_token, state = _platform_form(_field(answer.text, "data-next"))
    done = lti_client.post(f"{HTTPS}/lti/launch", data={"id_token": id_token, "state": state}, headers=FRAME,
                           follow_redirects=False)  # fmt: skip
    token = done.headers["location"].split("t=", 1)[1]
    lti_client.cookies.clear()  # the victim's browser
    logins = _logins(sessions)
    refused = lti_client.post(f"{HTTPS}/lti/arrive", data={"t": token}, headers=headers, follow_redirects=False)
    assert refused.status_code == 401 and _logins(sessions) == logins
    assert lti_client.get(f"{HTTPS}{linked}", follow_redirects=False).status_code == 303
    ours = {"origin": HTTPS, "sec-fetch-site": "same-origin"}
    assert (
        lti_client.post(f"{HTTPS}/lti/arrive", data={"t": token}, headers=ours, follow_redirects=False).status_code
        == 303
    )


def test_attack_unknown_expired_and_oversized_arrival_tokens_are_refused(
    lti_client, platform, sessions, linked
) -> None:  # type: ignore[no-untyped-def]

    ours = {"origin": HTTPS, "sec-fetch-site": "same-origin"}
    for token in ("", "nope", "x" * 5000):
        assert lti_client.get(f"{HTTPS}/lti/arrive", params={"t": token}).status_code == 401
        assert lti_client.post(f"{HTTPS}/lti/arrive", data={"t": token}, headers=ours).status_code == 401
    answer = _login(lti_client, platform, _student(platform), base=HTTPS, headers=FRAME)
    id_token, state = _platform_form(_field(answer.text, "data-next"))
    done = lti_client.post(f"{HTTPS}/lti/launch", data={"id_token": id_token, "state": state}, headers=FRAME,
                           follow_redirects=False)  # fmt: skip
    token = done.headers["location"].split("t=", 1)[1]
    with sessions() as s:  # ten minutes later
        s.execute(update(LtiLaunchState).where(LtiLaunchState.key.startswith("lti-arrive-"))
                  .values(expires_at=utcnow() - timedelta(seconds=1)))  # fmt: skip
        s.commit()
    lti_client.cookies.clear()
    assert lti_client.post(f"{HTTPS}/lti/arrive", data={"t": token}, headers=ours).status_code == 401


def test_a_top_level_launch_lands_directly_with_the_usual_cookie(lti_client, platform, linked) -> None:  # type: ignore[no-untyped-def]
    """A new window or Moodle's "new window" placement: no /lti/arrive, SameSite=Lax, as before."""
    answer = _login(lti_client, platform, _student(platform), base=HTTPS)
    id_token, state = _platform_form(answer.headers["location"])
    top = {"sec-fetch-dest": "document", "sec-fetch-site": "cross-site"}
    done = lti_client.post(f"{HTTPS}/lti/launch", data={"id_token": id_token, "state": state}, headers=top,
                           follow_redirects=False)  # fmt: skip
    assert done.status_code == 303 and done.headers["location"] == linked
    assert "samesite=lax" in done.headers["set-cookie"].lower()


def test_logging_out_inside_the_frame_clears_the_partitioned_cookie(lti_client, platform, linked) -> None:  # type: ignore[no-untyped-def]
    answer = _login(lti_client, platform, _student(platform), base=HTTPS, headers=FRAME)
    id_token, state = _platform_form(_field(answer.text, "data-next"))
    done = lti_client.post(f"{HTTPS}/lti/launch", data={"id_token": id_token, "state": state}, headers=FRAME)
    assert done.status_code == 200  # followed /lti/arrive to the set: the cookie came back
    page = lti_client.get(f"{HTTPS}{linked}")
    token = _field(page.text, 'name="csrf_token" value')
    out = lti_client.post(f"{HTTPS}/logout", data={"csrf_token": token}, follow_redirects=False)
    cleared = [c for c in out.headers.get_list("set-cookie") if c.startswith("autograder_session=")]
    assert cleared and all("partitioned" in c.lower() for c in cleared), cleared
