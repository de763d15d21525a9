"""A student in two offerings that both assign ch9 opens /sets/ch9 without ``?offering=``: a page to pick one, whose
links open the set in the offering picked."""

from __future__ import annotations

import re
import uuid
from typing import Any

import pytest

from tests.browser.conftest import PASSWORD, Server, check_a11y, log_in, shot

expect = pytest.importorskip("playwright.sync_api", reason="needs Playwright (make test installs it)").expect
# Fresh names per run: a kept server (AUTOGRADER_TEST_BROWSER_ROOT) runs the test again on the same database.
RUN = uuid.uuid4().hex[:6]
STUDENT = f"erin-{RUN}@example.com"


def _second_offering(server: Server) -> int:
    """A course of its own with ch9 assigned, and a new student in it and in the demo offering (as every student)."""
    from sqlalchemy import select

    from app.courses import service as courses
    from app.courses.accounts import create_user
    from app.db import make_engine, make_session_factory
    from app.problemsets.models import ProblemSet
    from app.users.models import Role

    engine = make_engine(server.database_url)
    with make_session_factory(engine)() as session:
        create_user(session, email=STUDENT, role=Role.STUDENT, password=PASSWORD, display_name="Erin Ko")
        course = courses.create_course(session, slug=f"chooser-{RUN}", title="Evening course")
        offering = courses.create_offering(session, course=course, slug="evening", title="Evening term")
        ch9 = session.scalars(select(ProblemSet).where(ProblemSet.slug == "ch9")).one()
        courses.assign(session, offering=offering, problem_set=ch9, published=True)
        courses.enroll(session, offering=offering, email=STUDENT)
        session.commit()
        offering_id = offering.id
    engine.dispose()
    return offering_id


def test_a_set_in_two_offerings_asks_which(new_page: Any, server: Server) -> None:
    evening = _second_offering(server)
    page = new_page()
    log_in(page, STUDENT)
    page.goto("/sets/ch9")
    expect(page.get_by_text("This set is assigned in more than one of your offerings: pick one.")).to_be_visible()
    expect(page.locator("ul.choices li")).to_have_count(2)
    shot(page, "60-set-chooser")
    check_a11y(page, "60-set-chooser")

    page.get_by_role("link", name="Evening course · Evening term").click()
    page.wait_for_url(re.compile(rf".*/sets/ch9\?offering={evening}$"))
    expect(page.locator(f'input[name="offering"][value="{evening}"]').first).to_be_attached()
    check_a11y(page, "61-set-chosen")


def test_a_student_and_an_instructor_in_two_offerings(new_page: Any, server: Server, tmp_path: Any) -> None:
    """Issue 25 item 1 in the browser: the student's cards name course and offering and the math preview works in
    the offering chosen (its address carries it); the instructor's upload form chooses the offering."""
    import shutil

    from sqlalchemy import select

    from app.courses import service as courses
    from app.courses.accounts import create_user
    from app.courses.models import Assignment, MemberRole
    from app.db import make_engine, make_session_factory
    from app.problemsets.models import ProblemSet
    from app.users.models import Role
    from tests.browser.test_instructor import _zip_of
    from tests.conftest import FIXTURE_SETS

    student, instructor = f"fay-{RUN}@example.com", f"gil-{RUN}@example.com"  # not the shared teacher: the other
    # browser tests upload as teacher@, whose upload form has its one offering chosen
    engine = make_engine(server.database_url)
    with make_session_factory(engine)() as session:
        create_user(session, email=student, role=Role.STUDENT, password=PASSWORD, display_name="Fay Lu")
        create_user(session, email=instructor, role=Role.INSTRUCTOR, password=PASSWORD, display_name="Gil Ma")
        course = courses.create_course(session, slug=f"twice-{RUN}", title="Weekend course")
        offering = courses.create_offering(session, course=course, slug="weekend", title="Weekend term")
        ch9 = session.scalars(select(ProblemSet).where(ProblemSet.slug == "ch9")).one()
        courses.assign(session, offering=offering, problem_set=ch9, published=True)
        courses.enroll(session, offering=offering, email=student)
        courses.enroll(session, offering=offering, email=instructor, role=MemberRole.INSTRUCTOR)
        session.commit()
        weekend = offering.id

    page = new_page()
    log_in(page, student)
    expect(page.locator("a.set-card[href^='/sets/ch9?'] .set-card-offering")).to_have_count(2)
    expect(page.locator(f"a.set-card[href='/sets/ch9?offering={weekend}']")).to_contain_text(
        "Weekend course · Weekend term"
    )
    check_a11y(page, "62-two-offerings-cards")
    page.locator(f"a.set-card[href='/sets/ch9?offering={weekend}']").click()
    page.wait_for_url(re.compile(rf".*/sets/ch9\?offering={weekend}$"))
    q1 = page.locator("#problem-q1")
    q1.locator("#q1-b1").fill("\\sqrt{d_k}")
    expect(q1.locator(".blank[data-part=b1] .blank-preview .katex")).to_be_visible()  # a 422 before: no offering
    check_a11y(page, "63-two-offerings-preview")

    teacher = new_page()
    log_in(teacher, instructor)
    teacher.goto("/instructor")
    chooser = teacher.get_by_label("Offering", exact=True)
    expect(chooser.locator("option", has_text="Weekend course · Weekend term")).to_have_count(1)
    chooser.select_option(str(weekend))
    folder = tmp_path / "set"
    shutil.copytree(FIXTURE_SETS / "basic", folder)
    yaml = folder / "problemset.yaml"
    yaml.write_text(yaml.read_text().replace("id: basic", f"id: weekend{RUN}", 1))
    teacher.locator("input[type=file][name=file]").set_input_files(str(_zip_of(folder, tmp_path / "w.zip")))
    teacher.get_by_role("button", name="Validate and upload").click()
    expect(teacher.get_by_text(f"weekend{RUN}").first).to_be_visible(timeout=120_000)
    expect(teacher.locator("strong", has_text=f"weekend{RUN}").first).to_be_visible(timeout=120_000)
    check_a11y(teacher, "64-two-offerings-upload")
    with make_session_factory(engine)() as session:  # into the offering chosen, as a draft students do not see
        placed = session.scalars(select(Assignment).join(ProblemSet).where(ProblemSet.slug == f"weekend{RUN}")).all()
        assert [(a.offering_id, a.published_at) for a in placed] == [(weekend, None)]
    engine.dispose()
