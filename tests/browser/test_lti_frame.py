"""An LTI launch where the LMS puts it: in an iframe of an LMS page on another site, in Chromium with third-party
cookies allowed, blocked, and with the frame keeping no cookie at all (as Safari does), with and without LTI
platform storage. The student submits an answer inside the frame, or in the new window the tool offers.

The tool is `autograder serve` on http://127.0.0.1; the test LMS (tests/lti/platform.py) answers on 127.0.0.1 but
is named http://localhost: another site, so the frame is cross-site. Chromium treats both as secure contexts, so
the tool's ``Secure; Partitioned`` cookies are kept over plain http here (on any other plain-http host they are
not, and a framed launch takes the new window). Each mode is a Chromium profile of its own (a persistent context):
``cookie_controls_mode`` 0 allows third-party cookies, 1 blocks them (partitioned cookies still work), and a cookie
content setting for the tool under the LMS's site blocks every cookie in the frame, partitioned ones too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from tests.browser.conftest import Server, check_a11y, chromium_path, shot
from tests.browser.test_lti import _register
from tests.lti import platform as lms
from tests.lti.platform import PlatformServer, canvas_claims

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect


@contextmanager
def _chromium(browser: Any, profile: Path, mode: str, tool: str, lms_url: str) -> Iterator[Any]:
    """A Chromium of its own whose profile allows third-party cookies ("allowed"), blocks them ("blocked"), or
    keeps no cookie of the tool inside the LMS's pages at all ("no-frame-cookies")."""
    prefs: dict[str, Any] = {"profile": {"cookie_controls_mode": 0 if mode == "allowed" else 1}}
    if mode == "no-frame-cookies":
        prefs["profile"]["content_settings"] = {"exceptions": {"cookies": {f"{tool},{lms_url}": {"setting": 2}}}}
    (profile / "Default").mkdir(parents=True)
    (profile / "Default" / "Preferences").write_text(json.dumps(prefs))
    context = browser.browser_type.launch_persistent_context(
        str(profile), executable_path=chromium_path(), args=["--no-sandbox"], viewport={"width": 1200, "height": 1000}
    )
    context.set_default_timeout(30_000)
    try:
        yield context
    finally:
        context.close()


def _login_url(server: Server, platform: lms.TestPlatform, hint: str) -> str:
    query = {"iss": platform.issuer, "login_hint": hint, "target_link_uri": f"{server.url}/lti/launch",
             "client_id": platform.client_id, "lti_deployment_id": platform.deployment_id}  # fmt: skip
    if platform.storage_target:
        query["lti_storage_target"] = platform.storage_target
    return f"{server.url}/lti/login?{urlencode(query)}"


def _linked_course(new_page: Any, server: Server, platform: lms.TestPlatform, context: str) -> None:
    """The instructor's first launch (a window of its own): the LMS course becomes a new offering with ch9."""
    page = new_page()
    teacher = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-frame", context=context,
                            email="teacher@example.com", custom={"problem_set": "ch9"})  # fmt: skip
    page.goto(_login_url(server, platform, platform.expect_launch(teacher)))
    page.wait_for_url("**/lti/link")
    page.get_by_label("A new offering for this LMS course").check()
    page.get_by_role("button", name="Continue").click()
    page.wait_for_url("**/sets/ch9?offering=*")


def _open_course(page: Any, server: Server, platform: lms.TestPlatform, context: str, who: str) -> Any:
    """The student opens the link in the LMS course page: the tool's login initiation in the page's iframe."""
    student = canvas_claims(platform, sub=f"s-{who}", role="Learner", link="rl-frame", context=context,
                            email=f"{who}@example.com", name="Frame Student")  # fmt: skip
    page.goto(f"{platform.base_url}/course?src=" + quote(_login_url(server, platform, platform.expect_launch(student))))
    frame = page.frame(name="tool")
    assert frame is not None
    return frame


def _answer(where: Any) -> None:
    """Answer ch9's q3 and submit: graded, in place (the page reads its grade through the API)."""
    q3 = where.locator("#problem-q3")
    q3.locator("#q3-b1").fill("顺序")
    q3.locator("#q3-b2").fill("位置编码")
    q3.get_by_role("button", name="Submit").click()
    where.wait_for_url(re.compile(r".*/submissions/\d+$"))
    expect(where.locator(".score-line")).to_be_visible()


@pytest.mark.parametrize("mode", ["allowed", "blocked"])
def test_a_launch_in_a_cross_site_iframe_stays_logged_in_there(
    browser: Any, new_page: Any, server: Server, tmp_path: Path, mode: str
) -> None:
    with PlatformServer(lms.TestPlatform(redirect_uris=[f"{server.url}/lti/launch"], auto_post=True),
                        host_name="localhost") as platform:  # fmt: skip
        _register(server, platform)
        context = f"frame-{mode}"
        _linked_course(new_page, server, platform, context)
        with _chromium(browser, tmp_path / "profile", mode, server.url, platform.base_url) as chromium:
            page = chromium.pages[0]  # the window the profile opened with
            frame = _open_course(page, server, platform, context, f"frame-{mode}")
            frame.wait_for_url("**/sets/ch9?offering=*")
            _answer(frame)
            shot(page, f"44-lti-frame-{mode}")
            assert len(chromium.pages) == 1  # no new window: all of it inside the LMS's page
            session = [c for c in chromium.cookies(server.url) if c["name"] == "autograder_session"]
            assert session and all(c["sameSite"] == "None" and c["secure"] for c in session), session


def test_platform_storage_keeps_the_state_and_a_new_window_the_session(
    browser: Any, new_page: Any, server: Server, tmp_path: Path
) -> None:
    """The frame keeps no cookie: the OIDC state goes through the LMS page's storage (postMessage), the launch is
    validated in the frame, and the page there opens the tool in a new window, logged in, on the same set."""
    platform_obj = lms.TestPlatform(
        redirect_uris=[f"{server.url}/lti/launch"], auto_post=True, storage_target="_parent"
    )
    with PlatformServer(platform_obj, host_name="localhost") as platform:
        _register(server, platform)
        _linked_course(new_page, server, platform, "frame-storage")
        with _chromium(browser, tmp_path / "profile", "no-frame-cookies", server.url, platform.base_url) as chromium:
            page = chromium.pages[0]  # the window the profile opened with
            frame = _open_course(page, server, platform, "frame-storage", "frame-storage")
            frame.wait_for_url("**/lti/arrive?t=*")
            expect(frame.get_by_role("heading", name="Open the tool in a new window")).to_be_visible()
            shot(page, "45-lti-frame-arrive")
            check_a11y(frame, "45-lti-frame-arrive")
            with chromium.expect_page() as opened:
                frame.get_by_role("button", name="Open in a new window").click()
            window = opened.value
            window.wait_for_url("**/sets/ch9?offering=*")
            _answer(window)
            # The token was used: the frame's button does not log anyone in again.
            again = chromium.new_page()
            again.goto(f"{server.url}/lti/arrive?{frame.url.split('?', 1)[1]}")
            assert "this launch is over or unknown" in again.content()


def test_without_storage_or_frame_cookies_the_login_moves_to_a_new_window(
    browser: Any, new_page: Any, server: Server, tmp_path: Path
) -> None:
    """No platform storage and no cookie in the frame: the login page says so before anything is spent, and its
    link runs the same login in a new window, which lands on the set."""
    with PlatformServer(lms.TestPlatform(redirect_uris=[f"{server.url}/lti/launch"], auto_post=True),
                        host_name="localhost") as platform:  # fmt: skip
        _register(server, platform)
        _linked_course(new_page, server, platform, "frame-none")
        with _chromium(browser, tmp_path / "profile", "no-frame-cookies", server.url, platform.base_url) as chromium:
            page = chromium.pages[0]  # the window the profile opened with
            frame = _open_course(page, server, platform, "frame-none", "frame-none")
            link = frame.get_by_role("link", name="Open in a new window")
            expect(link).to_be_visible()
            shot(page, "46-lti-frame-new-window")
            check_a11y(frame, "46-lti-frame-new-window")
            with chromium.expect_page() as opened:
                link.click()
            window = opened.value
            window.wait_for_url("**/sets/ch9?offering=*")
            _answer(window)
