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
