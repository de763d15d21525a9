"""The code editor (CodeMirror over the code text box) and the pages in Chinese, in the viewer's zone, in Chromium."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, check_a11y, log_in, shot

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
SIGNATURE = "def scaled_attention(q, k, v, key_valid=None, causal=False)"


def test_typing_in_the_code_editor_indents_with_tab_and_submits_the_text_box(new_page: Any) -> None:
    page = new_page()
    log_in(page, "student@example.com")
    page.goto("/sets/attention#problem-q5")
    q5 = page.locator("#problem-q5")
    editor = q5.locator(".cm-content")
    expect(editor).to_be_visible()
    expect(q5.locator("#q5-code")).to_be_hidden()  # kept in step, posted with the form
    expect(editor).to_have_attribute("aria-labelledby", "q5-code-label")
    editor.click()
    page.keyboard.press("Control+A")
    page.keyboard.press("Delete")  # the last code sent fills the editor; start afresh
    page.keyboard.type(SIGNATURE + ":")
    page.keyboard.press("Enter")  # Python indentation after the colon
    page.keyboard.type("x = q")
    page.keyboard.press("Enter")
    page.keyboard.press("Shift+Tab")  # out of the body ...
    page.keyboard.type("if causal:")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")  # ... and Tab indents one more level instead of leaving the editor
    page.keyboard.type("pass")
    expect(editor).to_be_focused()
    code = f"{SIGNATURE}:\n    x = q\nif causal:\n        pass"
    assert q5.locator("#q5-code").input_value() == code
    expect(page.locator("#q5-code-count")).to_have_text(re.compile(rf"^{len(code.encode())} / \d+ bytes$"))
    # Python highlighting: the keyword is styled apart from the names around it.
    keyword = q5.locator(".cm-line").first.locator("span", has_text=re.compile(r"^def$"))
    name = q5.locator(".cm-line").nth(1)
    assert keyword.evaluate("el => getComputedStyle(el).color") != name.evaluate("el => getComputedStyle(el).color")
    shot(page, "13-code-editor")
    check_a11y(page, "13-code-editor")
    q5.get_by_role("button", name="Submit code").click()
    page.wait_for_url(re.compile(r".*/submissions/\d+$"))
    assert page.locator("pre.code").text_content() == code


def test_without_javascript_the_plain_text_box_is_posted(new_page: Any) -> None:
    page = new_page(java_script_enabled=False)
    log_in(page, "bob@example.com")
    page.goto("/sets/attention#problem-q5")
    box = page.locator("#q5-code")
    expect(box).to_be_visible()
    expect(page.locator("#problem-q5 .cm-content")).to_have_count(0)
    box.fill("def scaled_attention(q, k, v, key_valid=None, causal=False):\n\treturn q\n")
    page.locator("#problem-q5").get_by_role("button", name="Submit code").click()
    page.wait_for_url(re.compile(r".*/submissions/\d+$"))
    assert "\treturn q" in (page.locator("pre.code").text_content() or "")


def test_a_chinese_browser_gets_chinese_pages_and_its_own_time_zone(new_page: Any) -> None:
    page = new_page(locale="zh-CN", timezone_id="Asia/Shanghai")
    page.goto("/login")
    assert page.locator("html").get_attribute("lang") == "zh-CN"
    page.get_by_label("邮箱").fill("bob@example.com")
    page.get_by_label("密码").fill(PASSWORD)
    page.get_by_role("button", name="登录").click()
    page.wait_for_url(re.compile(r".*/$"))
    expect(page.locator("h1")).to_have_text("习题集")
    assert {"name": "tz", "value": "Asia/Shanghai"}.items() <= next(
        c for c in page.context.cookies() if c["name"] == "tz"
    ).items()
    check_a11y(page, "14-zh-sets")
    page.goto("/sets/ch9#problem-q3")
    page.locator("#q3-b1").fill("顺序")
    page.locator("#problem-q3").get_by_role("button", name="提交").click()
    page.wait_for_url(re.compile(r".*/submissions/\d+$"))
    expect(page.locator(".meta").first).to_contain_text(re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d Asia/Shanghai"))
    expect(page.locator("#result h2")).to_have_text("检查项")
    shot(page, "15-zh-submission")
    check_a11y(page, "15-zh-submission")
    # The switcher: English from now on, whatever the browser asks for, on the same page.
    here = page.url
    page.get_by_role("button", name="English").click()  # logged in: a form, as it stores the choice on the account
    page.wait_for_url(here)
    expect(page.locator("#result h2")).to_have_text("Checks")
    assert page.locator("html").get_attribute("lang") == "en"
    # "Follow the browser" on the account page gives the browser's Chinese back (and bob to the other tests as he was).
    page.goto("/account")
    page.get_by_label("Follow the browser").check()
    page.get_by_role("button", name="Save language").click()
    page.wait_for_url(re.compile(r".*/account\?language=saved$"))
    assert page.locator("html").get_attribute("lang") == "zh-CN"
