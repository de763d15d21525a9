"""An instructor in Chromium: upload a set and read its mutant matrix, the gradebook with pending hand grading, the
offering's webhooks page."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import BROKEN, check_a11y, log_in, shot, shot_of
from tests.conftest import FIXTURE_SETS
from tests.ops.receiver import running_receiver

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
TEACHER = "teacher@example.com"


def _zip_of(folder: Path, into: Path) -> Path:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for file in sorted(folder.rglob("*")):
            if file.is_file() and "__pycache__" not in file.parts:
                z.write(file, file.relative_to(folder).as_posix())
    into.write_bytes(buf.getvalue())
    return into


def test_upload_shows_the_mutant_matrix_as_a_table(new_page: Any, tmp_path: Path) -> None:
    page = new_page(width=900)
    log_in(page, TEACHER)
    page.goto("/instructor")
    check_a11y(page, "20-instructor")
    page.locator("input[type=file][name=file]").set_input_files(
        str(_zip_of(FIXTURE_SETS / "codeset", tmp_path / "c.zip"))
    )
    page.get_by_role("button", name="Validate and upload").click()
    # The upload answers at once: its page follows the gate, then reloads itself with the report.
    page.wait_for_url(re.compile(r".*/instructor/uploads/[\w-]+$"))
    table = page.locator("table.matrix")
    expect(table).to_be_visible(timeout=240_000)
    headers = table.locator("thead th").all_inner_texts()
    assert "seconds" in headers and "expected to be caught by" in headers
    expect(table.locator("tbody th", has_text="mutant/subtracts.py")).to_be_visible()
    sticky = table.locator("thead th").first.evaluate("el => getComputedStyle(el).position")
    assert sticky == "sticky"
    wrap = page.locator(".matrix-wrap").first
    assert wrap.evaluate("el => getComputedStyle(el).overflowX") == "auto"
    shot(page, "21-instructor-matrix")
    check_a11y(page, "21-instructor-matrix")


def test_a_set_refused_at_start_up_is_shown_with_its_report(new_page: Any) -> None:
    page = new_page()
    log_in(page, TEACHER)
    page.goto("/instructor")
    card = page.locator("section.refused-set", has_text=BROKEN)
    expect(card.get_by_role("heading")).to_contain_text(f"Refused at start-up: {BROKEN}")
    expect(card).to_contain_text("prompts/q1.md")  # the loader's own reason, naming the missing file
    expect(card.locator("li").first).to_be_visible()
    shot(page, "28-instructor-refused-set")
    check_a11y(page, "28-instructor-refused-set")
    # Students do not meet it: the set was never stored.
    student = new_page()
    log_in(student, "bob@example.com")
    assert student.goto(f"/sets/{BROKEN}").status == 404


def test_gradebook_shows_pending_hand_grading(new_page: Any) -> None:
    student = new_page()
    log_in(student, "bob@example.com")
    student.goto("/sets/attention#problem-q9")
    q9 = student.locator("#problem-q9")
    q9.locator("textarea").first.fill("固定模型维度 d，改变头数 H。")
    q9.get_by_role("button", name="Submit").click()
    student.wait_for_url(re.compile(r".*/submissions/\d+$"))
    expect(student.locator("#result .pending-score")).to_be_visible()
    page = new_page()
    log_in(page, TEACHER)
    page.goto("/instructor/sets/attention/gradebook")
    row = page.locator("tbody tr", has_text="bob@example.com")
    expect(row.locator(".cell-pending").first).to_have_text("pending")
    expect(row.locator("td").last).to_contain_text("pending")
    shot(page, "22-gradebook-pending")
    check_a11y(page, "22-gradebook-pending")


def test_grading_queue_with_rubric_checkboxes_and_save_and_next(new_page: Any) -> None:
    for email, text in (
        ("student@example.com", "同一划分与种子，只改变窗口。"),
        ("bob@example.com", "比较 T² 与 T·w。"),
    ):
        student = new_page()
        log_in(student, email)
        student.goto("/sets/attention#problem-q10")
        q10 = student.locator("#problem-q10")
        q10.locator("textarea").first.fill(text)
        q10.get_by_role("button", name="Submit").click()
        student.wait_for_url(re.compile(r".*/submissions/\d+$"))
        expect(student.locator("#result .pending-score")).to_be_visible()
    page = new_page()
    log_in(page, TEACHER)
    page.goto("/instructor/sets/attention/queue/q10?anonymous=1")
    expect(page.locator("h2").first).not_to_contain_text("@example.com")  # anonymous mode
    expect(page.locator(".essay-answer").first).to_contain_text("同一划分与种子")  # the answer in full, not collapsed
    page.locator("input[name=met][value=controls]").check()
    page.locator("input[name=met][value=implementation]").check()
    expect(page.locator("#rubric-total")).to_have_text("3")
    page.get_by_label("Comment on controls").fill("清楚")
    shot(page, "23-grading-queue")
    shot_of(page.locator("main"), "readme-grading-queue")
    check_a11y(page, "23-grading-queue")
    page.get_by_role("button", name="Save and next").click()
    expect(page.locator(".essay-answer").first).to_contain_text("比较 T² 与 T·w")  # the next one in the queue
    expect(page.locator("h2").first).not_to_contain_text("@example.com")  # still anonymous
    # The student sees which items were met and the comment.
    student = new_page()
    log_in(student, "student@example.com")
    student.goto("/history")
    student.locator("tbody tr", has_text="q10").first.locator("a").first.click()
    feedback = student.locator("section", has_text="Instructor feedback")
    expect(feedback).to_contain_text("✓ met (2 pts)")
    expect(feedback).to_contain_text("清楚")
    expect(feedback).to_contain_text("✗ not met (1 pt)")
    shot(student, "24-student-rubric-feedback")


def test_offering_webhooks_page(new_page: Any) -> None:
    page = new_page()
    log_in(page, TEACHER)
    page.goto("/courses")
    page.locator("main a[href^='/offerings/']").first.click()
    page.get_by_role("link", name="Webhooks").click()
    expect(page.get_by_role("heading", name="Webhooks", level=1)).to_be_visible()
    check_a11y(page, "25-offering-webhooks")
    with running_receiver() as receiver:
        page.get_by_label("URL").fill(receiver.url)
        page.get_by_role("button", name="Register").click()
        secret = page.locator("#webhook-secret")
        expect(secret).to_contain_text("whsec_")
        receiver.secret = secret.inner_text()
        check_a11y(page, "26-offering-webhook-secret")
        page.goto(page.url)  # shown once: gone on the next visit
        expect(page.locator("#webhook-secret")).to_have_count(0)
        page.get_by_role("button", name="Send a test ping").last.click()
        (got,) = receiver.wait_for(1)
        assert got["verified"] and got["payload"]["type"] == "webhook.ping"
        page.reload()
        expect(page.get_by_role("button", name=re.compile(r"Redeliver delivery \d+")).first).to_be_visible()
        shot(page, "27-offering-webhooks-log")
        check_a11y(page, "27-offering-webhooks-log")
