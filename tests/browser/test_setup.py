"""Setting a course up through the pages alone (issue 25, item 4), in a browser whose zone is Europe/Berlin.

An instructor (not an admin) creates a course: a refused form comes back as typed, the zone is picked from the
IANA list; they become its first instructor. ch9 assigned there is a draft a student of the offering cannot open,
until Publish with its dates; each page names the one zone its dates are in. The roster refuses to demote the
last instructor, in words.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.browser.conftest import Server, check_a11y, log_in, shot

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
RUN = uuid.uuid4().hex[:6]
STUDENT = f"quinn-{RUN}@example.com"  # an account of its own, in no other offering (pat@'s password is changed by
# another browser test)


def _enrol_student(server: Server, offering_id: int) -> None:
    from app.courses import service as courses
    from app.courses.accounts import create_user
    from app.courses.models import Offering
    from app.db import make_engine, make_session_factory
    from app.users.models import Role
    from tests.browser.conftest import PASSWORD

    engine = make_engine(server.database_url)
    with make_session_factory(engine)() as session:
        create_user(session, email=STUDENT, role=Role.STUDENT, password=PASSWORD, enroll_default=False)
        courses.enroll(session, offering=session.get(Offering, offering_id), email=STUDENT)
        session.commit()
    engine.dispose()


def test_an_instructor_sets_a_course_up_and_publishes_a_draft(new_page: Any, server: Server) -> None:
    teacher = new_page(timezone_id="Europe/Berlin")
    log_in(teacher, "teacher@example.com")
    teacher.goto("/courses")
    teacher.reload()  # the page script has reported the browser's zone (the tz cookie) by now
    form = teacher.locator("form[action='/courses']")
    zone = form.get_by_label("Time zone")
    expect(zone).to_have_value("Europe/Berlin")  # the browser's own zone is chosen to start with
    assert zone.locator("option").count() > 300  # the IANA list, not a free-text box
    # The demo course's id is taken: the form comes back with what was typed and the reason.
    form.get_by_label("Course id").fill("attention-transformer")
    form.get_by_label("Title").fill(f"Evening NLP {RUN}")
    form.get_by_label("First offering id").fill("spring")
    zone.select_option("Asia/Shanghai")
    form.get_by_role("button", name="Create course").click()
    expect(teacher.get_by_role("alert")).to_contain_text("a course 'attention-transformer' already exists")
    form = teacher.locator("form[action='/courses']")
    expect(form.get_by_label("Title")).to_have_value(f"Evening NLP {RUN}")
    expect(form.get_by_label("Time zone")).to_have_value("Asia/Shanghai")
    shot(teacher, "70-course-refused")
    check_a11y(teacher, "70-course-refused")
    form.get_by_label("Course id").fill(f"evening-{RUN}")
    form.get_by_role("button", name="Create course").click()
    teacher.wait_for_url(re.compile(r".*/offerings/\d+$"))
    offering_id = int(teacher.url.rsplit("/", 1)[1])
    expect(teacher.get_by_text("your role: instructor")).to_be_visible()

    # Assign: a draft. The student of the offering cannot open it.
    _enrol_student(server, offering_id)
    teacher.get_by_label("Set").select_option("ch9")
    teacher.get_by_role("button", name="Assign").click()
    teacher.wait_for_url(re.compile(r".*/assignments/\d+/settings$"))
    expect(teacher.get_by_role("heading", name="Draft")).to_be_visible()
    check_a11y(teacher, "71-assignment-draft")
    student = new_page(timezone_id="Europe/Berlin")
    log_in(student, STUDENT)
    assert student.goto(f"/sets/ch9?offering={offering_id}").status == 404
    student.goto("/")
    expect(student.get_by_text(f"Evening NLP {RUN}")).to_have_count(0)

    # Publish with its dates (read in the offering's zone, which the settings page shows every date in).
    expect(teacher.get_by_text("Dates in Asia/Shanghai; blank: none.")).to_be_visible()
    due = (datetime.now(UTC) + timedelta(days=7, hours=8)).strftime("%Y-%m-%dT%H:%M")
    teacher.get_by_label("Due", exact=True).fill(due)
    teacher.get_by_label("Attempts per problem").fill("3")
    teacher.get_by_role("button", name="Publish").click()
    expect(teacher.get_by_role("heading", name="Published")).to_be_visible()
    expect(teacher.get_by_role("button", name="Back to draft")).to_be_visible()
    shot(teacher, "72-assignment-published")
    check_a11y(teacher, "72-assignment-published")
    assert student.goto(f"/sets/ch9?offering={offering_id}").status == 200

    # The course home names the zone its dates are in, and the dates are in it (the browser's).
    teacher.goto(f"/offerings/{offering_id}")
    expect(teacher.get_by_text("dates in Europe/Berlin")).to_be_visible()
    due_cell = teacher.locator("tbody tr").first.locator("td").nth(2)
    expect(due_cell).to_contain_text("Europe/Berlin")
    assert "Asia/Shanghai" not in teacher.locator("main").inner_text()
    check_a11y(teacher, "73-course-home-one-zone")

    # The last instructor is not demoted: the roster says why.
    teacher.goto(f"/offerings/{offering_id}/roster")
    teacher.locator("tbody tr", has_text="teacher@example.com").get_by_role("link", name=re.compile("^Change ")).click()
    teacher.get_by_label("Role", exact=True).select_option("ta")
    teacher.get_by_role("button", name="Save").click()
    teacher.get_by_role("button", name=re.compile(r"^Yes, make .* TA$")).click()
    expect(teacher.get_by_role("alert")).to_contain_text("is the last instructor of this offering")
    check_a11y(teacher, "74-last-instructor")

    # In Chinese, the refusal reads in Chinese.
    chinese = new_page(timezone_id="Asia/Shanghai")
    log_in(chinese, "teacher@example.com")
    # This browser only (the switcher's cookie): the account's own choice stays unset for the other tests.
    chinese.context.add_cookies([{"name": "lang", "value": "zh_CN", "url": server.url}])
    chinese.goto("/courses")
    chinese.locator("form[action='/courses']").get_by_label("课程标识").fill(f"evening-{RUN}")
    chinese.locator("form[action='/courses']").get_by_label("标题").fill("重复")
    chinese.get_by_role("button", name="创建课程").click()
    expect(chinese.get_by_role("alert")).to_contain_text("已存在")
    check_a11y(chinese, "75-course-refused-zh")
