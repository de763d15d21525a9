"""The pages' language as an account setting, in Chromium: chosen on the account page, followed on another browser."""

from __future__ import annotations

import re
from typing import Any

import pytest
from sqlalchemy import select

from tests.browser.conftest import PASSWORD, Server, check_a11y, log_in, shot

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
EMAIL = "lan@example.com"


def _account_following_the_browser(server: Server) -> None:
    """An account of this test's own, in no offering (the other tests count their students), with nothing chosen."""
    from app.courses.accounts import create_user
    from app.db import make_engine, make_session_factory
    from app.users.models import Role, User

    engine = make_engine(server.database_url)
    with make_session_factory(engine)() as session:
        user = session.scalar(select(User).where(User.email == EMAIL))
        if user is None:  # a server kept from an earlier run (AUTOGRADER_TEST_BROWSER_ROOT) has it already
            create_user(session, email=EMAIL, role=Role.STUDENT, password=PASSWORD, enroll_default=False)
        else:
            user.locale = None
        session.commit()
    engine.dispose()


def test_the_language_chosen_on_the_account_follows_the_user_to_another_browser(new_page: Any, server: Server) -> None:
    _account_following_the_browser(server)
    page = new_page(locale="en-US")
    log_in(page, EMAIL)
    page.goto("/account")
    assert page.locator("html").get_attribute("lang") == "en"
    expect(page.get_by_label("Follow the browser")).to_be_checked()
    check_a11y(page, "50-account-language")
    page.get_by_label("中文", exact=True).check()
    page.get_by_role("button", name="Save language").click()
    page.wait_for_url(re.compile(r".*/account\?language=saved$"))
    # Saved: this page is in Chinese at once, though the browser asks for English, and it says so.
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    expect(page.get_by_role("status")).to_contain_text("已保存")
    expect(page.get_by_label("中文", exact=True)).to_be_checked()
    shot(page, "51-account-language-saved")
    check_a11y(page, "51-account-language-saved")

    # Another browser, English too and with no cookie of ours: English until the login, Chinese from then on.
    other = new_page(locale="en-US")
    log_in(other, EMAIL)  # the login page's English labels
    assert other.locator("html").get_attribute("lang") == "zh-CN"
    expect(other.locator("h1")).to_have_text("习题集")
    assert not [c for c in other.context.cookies() if c["name"] == "lang"]  # the account decided, not a cookie
    other.goto("/account")
    expect(other.locator("h1")).to_have_text("账户")
    expect(other.get_by_label("中文", exact=True)).to_be_checked()
