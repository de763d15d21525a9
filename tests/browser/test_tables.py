"""Every table fits the page at 1280 px and on a 390 px phone, in Chromium: a table wider than its card scrolls
sideways inside its own wrapper (a labelled region a keyboard user can focus and scroll with the arrow keys), and
the page itself never scrolls sideways."""

from __future__ import annotations

from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, check_a11y, log_in, shot

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
TEACHER = "teacher@example.com"
STUDENT = "student@example.com"
WIDTHS = (1280, 390)
# b1 right, b3 a wrong answer no other test gives (the statistics test counts its own).
WRONG_Q3 = {"problem_set": "ch9", "problem": "q3", "answers": {"b1": "顺序", "b3": "全局掩码"}}

# Per wrapper: focusable and labelled as a region, and whether its table is wider than the wrapper.
_WRAPPERS = """() => [...document.querySelectorAll('table')].map(t => {
    const w = t.closest('.table-wrap');
    return w === null ? {wrapped: false, table: t.className} : {
        wrapped: true, table: t.className, tabindex: w.getAttribute('tabindex'), role: w.getAttribute('role'),
        named: Boolean(w.getAttribute('aria-label') || w.getAttribute('aria-labelledby')),
        overflowX: getComputedStyle(w).overflowX, wide: w.scrollWidth > w.clientWidth + 1};
})"""


def _page_at(new_page: Any, width: int) -> Any:
    if width < 600:
        return new_page(width=width, height=844, is_mobile=True, has_touch=True, device_scale_factor=2)
    return new_page(width=width, height=900)


def _submit(new_page: Any, email: str, body: dict[str, Any]) -> str:
    request = new_page().context.request
    assert request.post("/api/v1/auth/login", data={"email": email, "password": PASSWORD}).ok
    graded = request.post("/api/v1/submissions?wait=20", data=body)
    assert graded.ok, graded.text()
    return str(graded.json()["offering"])


def _tables_fit(page: Any, name: str) -> int:
    """Assert the page fits its width and every table is in a focusable, named scroll region; check axe.

    Returns how many tables were wider than their wrapper, each of which the arrow keys scrolled."""
    overflow = page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"{name}: the page scrolls sideways by {overflow}px"
    tables = page.evaluate(_WRAPPERS)
    assert tables, f"{name}: no table on the page"
    for t in tables:
        assert t["wrapped"], f"{name}: table {t['table']!r} is not in a .table-wrap"
        assert (t["tabindex"], t["role"], t["named"]) == ("0", "region", True), f"{name}: {t}"
        assert t["overflowX"] == "auto", f"{name}: {t}"
    wide = [i for i, t in enumerate(tables) if t["wide"]]
    for i in wide:
        wrapper = page.locator("table").nth(i).locator("xpath=ancestor::div[contains(@class, 'table-wrap')][1]")
        wrapper.scroll_into_view_if_needed()
        wrapper.evaluate("el => { el.scrollLeft = 0; }")
        wrapper.focus()
        expect(wrapper).to_be_focused()
        for _ in range(3):
            page.keyboard.press("ArrowRight")
        page.wait_for_function("el => el.scrollLeft > 0", arg=wrapper.element_handle())
    shot(page, name)
    check_a11y(page, name)
    return len(wide)


def test_the_instructors_tables_fit_both_widths(new_page: Any) -> None:
    # A wrong answer for the statistics' tables (with its "Accept as right" button).
    offering = _submit(new_page, STUDENT, WRONG_Q3)
    gradebook = f"/instructor/sets/ch9/gradebook?offering={offering}"
    for width in WIDTHS:
        page = _page_at(new_page, width)
        log_in(page, TEACHER)
        page.goto(gradebook)
        expect(page.locator("table.gradebook")).to_be_visible()
        expect(page.locator("table.wrong-answers").first).to_be_attached()
        wide = _tables_fit(page, f"80-tables-gradebook-{width}")
        stat_tables = page.locator("section.stat .table-wrap").evaluate_all(
            "els => els.filter(e => e.scrollWidth > e.clientWidth + 1).map(e => e.getAttribute('aria-label'))"
        )
        if width == 1280:
            assert not stat_tables, f"statistics tables cut off at 1280 px: {stat_tables}"
        if width == 390:
            assert wide >= 1, "the gradebook is wider than a phone: its wrapper must scroll"
            # The statistics cards take the phone's whole width, one a row.
            boxes = page.locator("section.stat").evaluate_all("els => els.map(e => e.getBoundingClientRect().left)")
            assert len(set(round(x) for x in boxes)) == 1
        page.goto(f"/offerings/{offering}")
        _tables_fit(page, f"81-tables-offering-{width}")
        settings = page.locator("a[href$='/settings']").first.get_attribute("href")
        page.goto(f"/offerings/{offering}/roster")
        _tables_fit(page, f"82-tables-roster-{width}")
        page.goto(str(settings))
        expect(page.locator("table.per-problem")).to_be_visible()
        wide = _tables_fit(page, f"83-tables-assignment-settings-{width}")
        if width == 390:
            assert wide >= 1, "the per-problem settings are wider than a phone: their wrapper must scroll"


def test_the_students_tables_fit_both_widths(new_page: Any) -> None:
    offering = _submit(new_page, STUDENT, WRONG_Q3)
    for width in WIDTHS:
        page = _page_at(new_page, width)
        log_in(page, STUDENT)
        page.goto("/history")
        wide = _tables_fit(page, f"84-tables-history-{width}")
        if width == 390:
            assert wide >= 1, "the history's seven columns are wider than a phone: their wrapper must scroll"
        page.goto(f"/offerings/{offering}/grades")
        _tables_fit(page, f"85-tables-grades-{width}")
