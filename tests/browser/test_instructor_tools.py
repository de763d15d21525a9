"""An instructor in Chromium: a bulk regrade from preview to its live progress, one student's page (gradebook row
and submissions), the account and token pages."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, check_a11y, log_in, shot

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
TEACHER = "teacher@example.com"


def test_bulk_regrade_preview_then_progress_in_place(new_page: Any) -> None:
    student = new_page()
    api = student.context.request  # the student's answers through the API (the set page has its own tests)
    assert api.post("/api/v1/auth/login", data={"email": "bob@example.com", "password": PASSWORD}).ok
    for choice in ("A", "B"):
        body = {"problem_set": "ch9", "problem": "q2", "answers": {"b1": choice}}
        assert api.post("/api/v1/submissions?wait=20", data=body).ok

    page = new_page()
    log_in(page, TEACHER)
    page.goto("/instructor/sets/ch9/gradebook")
    page.get_by_role("link", name="Bulk regrade").click()
    page.get_by_label("Problem").select_option("q2")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("section", has=page.get_by_role("heading", name="Preview"))
    expect(preview).to_contain_text("would be regraded")
    expect(preview.locator("table caption")).to_have_text("Current final score of the selected submissions")
    shot(page, "30-bulk-regrade-preview")
    check_a11y(page, "30-bulk-regrade-preview")

    preview.get_by_role("button", name=re.compile(r"Regrade \d+ submissions?")).click()
    page.wait_for_url(re.compile(r".*/instructor/regrades/\d+$"))
    # progress.js swaps the part in place (the page is not reloaded) until the batch is done; a batch done before
    # the page loaded shows "done" at once.
    page.evaluate("() => { window.__same_page = true; }")
    expect(page.locator("#regrade-progress h2")).to_contain_text("· done", timeout=60_000)
    assert page.evaluate("() => window.__same_page === true")
    expect(page.locator("#regrade-progress")).to_contain_text("unchanged")
    shot(page, "31-bulk-regrade-progress")
    check_a11y(page, "31-bulk-regrade-progress")

    # The gradebook's name links to the student's page: their gradebook row, then their submissions across the
    # offering (the row's own link is gone: the name leads to both).
    page.goto("/instructor/sets/ch9/gradebook")
    expect(page.get_by_role("link", name="row", exact=True)).to_have_count(0)
    page.get_by_role("link", name="Bob Ray").click()
    expect(page.get_by_role("heading", name="Bob Ray", level=1)).to_be_visible()
    row = page.locator("section.card", has=page.get_by_role("heading", name="Gradebook row"))
    ch9_row = row.locator("table.row-summary", has=page.locator("caption", has_text="第 9 章练习"))
    # B is q2's answer (2 points): the better of bob's attempts counts, whatever other tests gave him there.
    expect(ch9_row.locator("tbody tr", has_text="q2").locator("td").nth(1)).to_have_text("2 / 2")
    # A table per assignment; other tests may have given bob attention submissions too, listed before ch9's.
    ch9 = page.locator("section.card", has=page.get_by_role("heading", name=re.compile("第 9 章练习")))
    expect(ch9.locator("table.student-work")).to_contain_text("q2")
    shot(page, "32-student-work")
    check_a11y(page, "32-student-work")


def test_account_and_token_pages(new_page: Any) -> None:
    page = new_page()
    log_in(page, TEACHER)
    page.get_by_role("link", name="Account").click()
    expect(page.get_by_role("heading", name="Change password")).to_be_visible()
    check_a11y(page, "33-account")
    page.get_by_role("link", name="API tokens").first.click()
    page.get_by_label("Name").fill("browser ci")
    page.get_by_role("button", name="Create token").click()
    token = page.get_by_role("textbox", name="Token").input_value()
    assert token.startswith("agt_")
    shot(page, "34-token-created")
    check_a11y(page, "34-token-created")
    page.goto("/account/tokens")
    expect(page.locator("table.tokens")).to_contain_text("browser ci")
    assert token not in page.content()  # shown once
    page.get_by_role("button", name=re.compile(r"Revoke browser ci")).click()
    expect(page.locator("table.tokens tr", has_text="browser ci")).to_contain_text("revoked")


def test_change_password_then_log_in_with_the_new_one(new_page: Any) -> None:
    page = new_page()
    log_in(page, "pat@example.com")
    page.goto("/account")
    page.get_by_label("Current password").fill("not the password")
    page.locator("#new_password").fill("a new password 1")
    page.get_by_label("New password again").fill("a new password 1")
    page.get_by_role("button", name="Change password").click()
    expect(page.locator("#password-error")).to_be_visible()  # the current one is checked
    expect(page.get_by_label("Current password")).to_have_attribute("aria-invalid", "true")
    check_a11y(page, "35-password-refused")
    page.get_by_label("Current password").fill(PASSWORD)
    page.locator("#new_password").fill("a new password 1")
    page.get_by_label("New password again").fill("a new password 1")
    page.get_by_role("button", name="Change password").click()
    expect(page.locator(".alert.success")).to_be_visible()
    shot(page, "36-password-changed")
    other = new_page()
    other.goto("/login")
    other.get_by_label("Email").fill("pat@example.com")
    other.get_by_label("Password").fill(PASSWORD)
    other.get_by_role("button", name="Log in").click()
    expect(other.locator(".alert.error, .form-error").first).to_be_visible()  # the old one no longer works
    other.get_by_label("Password").fill("a new password 1")
    other.get_by_role("button", name="Log in").click()
    other.wait_for_url(re.compile(r".*/$"))
