"""An instructor reads the statistics in Chromium: the score histogram and pass rates drawn as SVG, the students who
behave like a mutant, the most common wrong answers, and one of those accepted as an alias in one click, through
the upload gate, the regrade preview and the regrade."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, check_a11y, log_in, shot
from tests.conftest import REPO

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
TEACHER = "teacher@example.com"
# d2l's name for the causal mask; not among ch9 q3 b3's aliases (a real instructor might well accept it).
ALIAS = "序列掩码"


def _api_as(new_page: Any, email: str) -> Any:
    request = new_page().context.request
    assert request.post("/api/v1/auth/login", data={"email": email, "password": PASSWORD}).ok
    return request


def test_charts_and_the_students_who_behave_like_a_mutant(new_page: Any) -> None:
    api = _api_as(new_page, "bob@example.com")
    code = (REPO / "problems/attention/mutants/q5/wrong_softmax_axis.py").read_text(encoding="utf-8")
    body = {"problem_set": "attention", "problem": "q5", "code": code}
    graded = api.post("/api/v1/submissions?wait=240", data=body, timeout=300_000)
    assert graded.ok and graded.json()["status"] == "graded", graded.text()

    page = new_page(width=1100)
    log_in(page, TEACHER)
    # The teacher may teach other offerings by now (the courses walk): the one bob's submission went to.
    page.goto(f"/instructor/sets/attention/gradebook?offering={graded.json()['offering']}")
    q5 = page.locator("section.stat", has=page.locator(".pid", has_text=re.compile(r"^q5$")))
    histogram = q5.get_by_role("img", name="Score histogram of q5")
    expect(histogram).to_be_visible()
    expect(histogram.locator("desc")).to_contain_text("Counted scores of")
    expect(histogram.locator("rect.chart-bar").first).to_be_attached()
    expect(q5.get_by_role("img", name="Pass rate per check of q5")).to_be_visible()
    expect(q5.locator("table.checks-table tbody tr").first).to_be_visible()
    likeness = q5.locator("table.mutant-likeness")
    row = likeness.locator("tr", has=page.locator("th code", has_text="wrong_softmax_axis.py"))
    expect(row).to_be_visible()
    assert int(row.locator("td.num").inner_text()) >= 1  # bob's submission fails what that mutant fails
    q5.scroll_into_view_if_needed()
    shot(page, "70-statistics-charts-and-mutants")
    check_a11y(page, "70-statistics-charts-and-mutants")


def test_a_common_wrong_answer_becomes_an_alias_in_one_click(new_page: Any) -> None:
    offerings = set()
    for email in ("student@example.com", "bob@example.com"):
        api = _api_as(new_page, email)
        body = {"problem_set": "ch9", "problem": "q3", "answers": {"b1": "顺序", "b3": ALIAS}}
        graded = api.post("/api/v1/submissions?wait=20", data=body).json()
        assert graded["status"] == "graded", graded
        offerings.add(graded["offering"])
    (offering,) = offerings
    gradebook = f"/instructor/sets/ch9/gradebook?offering={offering}"

    page = new_page(width=1100)
    log_in(page, TEACHER)
    page.goto(gradebook)
    q3 = page.locator("section.stat", has=page.locator(".pid", has_text=re.compile(r"^q3$")))
    wrong = q3.locator("table.wrong-answers")
    row = wrong.locator("tr", has=page.locator("code", has_text=ALIAS))
    expect(row.locator("td.num")).to_have_text("2")
    # Known-wrong examples of the set ("mask", from the student walk) get no button.
    mask = wrong.locator("tr", has=page.locator("code", has_text=re.compile(r"^mask$")))
    if mask.count():
        expect(mask.get_by_role("button")).to_have_count(0)
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page scrolls sideways by {overflow}px"  # a wide table scrolls in its own card
    shot(page, "71-statistics-wrong-answers")
    check_a11y(page, "71-statistics-wrong-answers")

    row.get_by_role("button", name=f"Accept as right: {ALIAS} for q3 b3").click()
    page.wait_for_url(re.compile(r".*/instructor/uploads/[\w-]+$"))
    stored = page.locator(".alert.success")
    expect(stored).to_contain_text(re.compile(r"Stored ch9 as version \d+"), timeout=120_000)
    expect(page.locator("#alias-added")).to_contain_text(ALIAS)
    shot(page, "72-alias-stored")
    check_a11y(page, "72-alias-stored")

    page.get_by_role("link", name="preview the regrade of q3").click()
    preview = page.locator("section", has=page.get_by_role("heading", name="Preview"))
    expect(preview.locator(".prediction")).to_contain_text(re.compile(r"[2-9]\d* would go up"))
    shot(page, "73-alias-regrade-preview")
    preview.get_by_role("button", name=re.compile(r"Regrade \d+ submissions?")).click()
    page.wait_for_url(re.compile(r".*/instructor/regrades/\d+$"))
    expect(page.locator("#regrade-progress h2")).to_contain_text("· done", timeout=60_000)

    page.goto(gradebook)
    # Regraded, the two answers are right: the alias's row is gone from the wrong answers.
    q3 = page.locator("section.stat", has=page.locator(".pid", has_text=re.compile(r"^q3$")))
    expect(q3.locator("table.wrong-answers code", has_text=ALIAS)).to_have_count(0)
