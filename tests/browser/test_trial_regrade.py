"""An instructor in Chromium tries a code problem's bulk regrade before applying it: the trial's progress is swapped
in place until its prediction and the apply button appear, and applying then follows the batch's progress."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, check_a11y, log_in, shot

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
TEACHER = "teacher@example.com"
RETURNS_V = "def scaled_attention(q, k, v, key_valid=None, causal=False):\n    return v\n"


def test_trial_run_of_a_code_problem_then_apply(new_page: Any) -> None:
    student = new_page()
    api = student.context.request  # the student's program through the API (the editor has its own tests)
    assert api.post("/api/v1/auth/login", data={"email": "bob@example.com", "password": PASSWORD}).ok
    body = {"problem_set": "attention", "problem": "q5", "code": RETURNS_V}
    graded = api.post("/api/v1/submissions?wait=25", data=body)
    assert graded.ok and graded.json()["status"] == "graded", graded.text()

    page = new_page()
    log_in(page, TEACHER)
    page.goto("/instructor/sets/attention/gradebook")
    page.get_by_role("link", name="Bulk regrade").click()
    page.get_by_label("Problem").select_option("q5")
    page.get_by_role("button", name="Preview").click()
    preview = page.locator("section", has=page.get_by_role("heading", name="Preview"))
    expect(preview).to_contain_text("too slow to grade in this page")
    trial = preview.get_by_role("button", name=re.compile(r"Trial run: grade \d+ submissions? against the current"))
    expect(trial).to_be_visible()
    shot(page, "50-trial-regrade-offer")
    check_a11y(page, "50-trial-regrade-offer")

    trial.click()
    page.wait_for_url(re.compile(r".*/instructor/regrade-trials/[\w-]+$"), timeout=60_000)  # generous: a busy host
    expect(page.locator("main")).to_contain_text("graded against version")
    # progress.js swaps the part in place (no reload) until the trial is done; one done before the page loaded
    # shows its result at once.
    page.evaluate("() => { window.__same_page = true; }")
    progress = page.locator("#trial-progress")
    expect(progress.locator("h2")).to_contain_text("· done", timeout=180_000)
    assert page.evaluate("() => window.__same_page === true")
    expect(progress).to_contain_text("stay the same; total change")
    shot(page, "51-trial-regrade-result")
    check_a11y(page, "51-trial-regrade-result")

    progress.get_by_role("button", name=re.compile(r"Regrade \d+ submissions?")).click()
    page.wait_for_url(re.compile(r".*/instructor/regrades/\d+$"))
    expect(page.locator("#regrade-progress h2")).to_contain_text("· done", timeout=180_000)
    expect(page.locator("#regrade-progress")).to_contain_text("unchanged")
    shot(page, "52-trial-regrade-applied")
