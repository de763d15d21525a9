"""The first instructor launch from an LMS course: link it to an offering the instructor teaches, or a new one; an
offering they do not instruct is refused with nothing written; an admin moves a linked LMS course to another
offering from its LMS page."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from app.courses import accounts
from app.courses import service as courses
from app.courses.models import Assignment, Course, MemberRole, Membership, Offering
from app.lti.models import LtiContext, LtiResourceLink
from app.users.models import Role
from tests.lti.conftest import launch
from tests.lti.platform import canvas_claims

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _token(page_text: str) -> str:
    return page_text.split('name="csrf_token" value="')[1].split('"')[0]


def _teacher(platform):  # type: ignore[no-untyped-def]
    return canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="prof@uni.example",
                         custom={"problem_set": "basic"})  # fmt: skip


def _demo_id(sessions) -> int:  # type: ignore[no-untyped-def]
    with sessions() as s:
        return courses.home_offering(s).id


def test_an_instructor_links_the_lms_course_to_an_offering_they_teach(
    lti_client, platform, sessions, basic_set
) -> None:  # type: ignore[no-untyped-def]
    demo = _demo_id(sessions)
    with sessions() as s:
        course_count = s.scalar(select(func.count()).select_from(Course))
    asked = launch(lti_client, platform, _teacher(platform), link=None)
    assert asked.response.status_code == 303 and asked.response.headers["location"] == "/lti/link"
    with sessions() as s:  # nothing is written before the instructor chooses
        assert s.scalar(select(func.count()).select_from(LtiContext)) == 0
    page = lti_client.get("/lti/link")
    assert page.status_code == 200 and f'value="{demo}"' in page.text and 'value="new"' in page.text
    answer = lti_client.post("/lti/link", data={"csrf_token": _token(page.text), "offering": str(demo)},
                             follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303, answer.text
    assert answer.headers["location"] == f"/sets/basic?offering={demo}"
    with sessions() as s:
        [ctx] = s.scalars(select(LtiContext))
        assert ctx.offering_id == demo
        assert s.scalar(select(func.count()).select_from(Course)) == course_count  # no new course or offering
    # One answer per launch: the question is gone.
    assert lti_client.get("/lti/link").status_code == 401

    lti_client.cookies.clear()  # a student of the LMS course lands in the linked offering
    student = canvas_claims(platform, sub="s-1", role="Learner", link="rl-1", email="sam@uni.example")
    landed = launch(lti_client, platform, student)
    assert landed.response.headers["location"] == f"/sets/basic?offering={demo}"
    with sessions() as s:
        assert s.scalar(select(Membership).where(Membership.email == "sam@uni.example")).offering_id == demo  # type: ignore[union-attr]
    lti_client.cookies.clear()  # the instructor's next launch goes straight in
    again = launch(lti_client, platform, _teacher(platform), link=None)
    assert again.response.headers["location"] == f"/sets/basic?offering={demo}"


def test_an_instructor_cannot_link_to_an_offering_they_do_not_instruct(
    lti_client, platform, sessions, basic_set
) -> None:  # type: ignore[no-untyped-def]
    with sessions() as s:
        other = courses.create_offering(s, course=courses.create_course(s, slug="other", title="Other"), slug="f26",
                                        title="Other F26")  # fmt: skip
        ta_here = courses.create_offering(s, course=courses.create_course(s, slug="tas", title="TAs"), slug="f26",
                                          title="TA F26")  # fmt: skip
        courses.enroll(s, offering=ta_here, email="prof@uni.example", role=MemberRole.TA)
        s.commit()
        forbidden = [other.id, ta_here.id]
        before = {m.__name__: s.scalar(select(func.count()).select_from(m)) for m in (LtiContext, Membership, Offering)}
    launch(lti_client, platform, _teacher(platform), link=None)
    page = lti_client.get("/lti/link")
    assert all(f'value="{o}"' not in page.text for o in forbidden)  # not offered
    for offering_id in forbidden:  # and not taken when posted anyway
        answer = lti_client.post("/lti/link", data={"csrf_token": _token(page.text), "offering": str(offering_id)},
                                 follow_redirects=False)  # fmt: skip
        assert answer.status_code == 403 and "only to an offering you instruct" in answer.text
    assert lti_client.post("/lti/link", data={"csrf_token": _token(page.text), "offering": "x"}).status_code == 422
    with sessions() as s:
        after = {m.__name__: s.scalar(select(func.count()).select_from(m)) for m in (LtiContext, Membership, Offering)}
    assert after == before
    # Another browser (no launch waiting in its session) gets no question to answer.
    lti_client.cookies.clear()
    assert lti_client.post("/lti/link", data={"offering": "new"}).status_code in (401, 403)


def test_an_admin_moves_a_linked_lms_course_to_another_offering(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    demo = _demo_id(sessions)
    posted = launch(lti_client, platform, _teacher(platform), link="new")
    new = int(posted.response.headers["location"].rsplit("=", 1)[1])
    assert new != demo
    with sessions() as s:
        ctx_id = s.scalars(select(LtiContext.id)).one()
    page = lti_client.get(f"/offerings/{new}/lti")
    assert "Relink" not in page.text  # instructors do not move LMS courses
    refused = lti_client.post(f"/offerings/{new}/lti/contexts/{ctx_id}/link",
                              data={"csrf_token": _token(page.text), "offering": str(demo)})  # fmt: skip
    assert refused.status_code == 403
    with sessions() as s:
        accounts.create_user(s, email="root@uni.example", role=Role.ADMIN, password="admin-password-1")
        s.commit()
    lti_client.cookies.clear()
    login = lti_client.post("/api/v1/auth/login", json={"email": "root@uni.example", "password": "admin-password-1"})
    assert login.status_code == 200, login.text
    page = lti_client.get(f"/offerings/{new}/lti")
    assert "Relink" in page.text and f'<option value="{demo}"' in page.text
    moved = lti_client.post(f"/offerings/{new}/lti/contexts/{ctx_id}/link",
                            data={"csrf_token": _token(page.text), "offering": str(demo)},
                            follow_redirects=False)  # fmt: skip
    assert moved.status_code == 303 and moved.headers["location"] == f"/offerings/{demo}/lti"
    with sessions() as s:
        ctx = s.get(LtiContext, ctx_id)
        assert ctx is not None and ctx.offering_id == demo
        link = s.scalars(select(LtiResourceLink)).one()
        assert courses_of(s, link.assignment_id) == demo  # the link opens the set in the offering it moved to
    lti_client.cookies.clear()
    landed = launch(lti_client, platform, _teacher(platform), link=None)
    assert landed.response.headers["location"] == f"/sets/basic?offering={demo}"


def courses_of(session, assignment_id: int) -> int:  # type: ignore[no-untyped-def]
    assignment = session.get(Assignment, assignment_id)
    assert assignment is not None
    return int(assignment.offering_id)
