"""Roster sync from the test LMS's NRPS endpoint (two members a page, Link headers): adds, updates, drops
students the LMS no longer lists, never drops staff, and never compares the roster's context id with the launch's."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from app.courses.models import MemberRole, Membership, MemberStatus
from app.lti.models import LtiUser
from app.users.models import User
from tests.lti.conftest import launch
from tests.lti.platform import ROLE, canvas_claims

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _member(sub: str, role: str, email: str, name: str, status: str = "Active") -> dict[str, object]:
    return {"user_id": sub, "roles": [ROLE + role], "email": email, "name": name, "status": status,
            "lis_person_sourcedid": f"sis-{sub}"}  # fmt: skip


def _roster(sessions, offering_id: int) -> dict[str, tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    with sessions() as s:
        rows = s.scalars(select(Membership).where(Membership.offering_id == offering_id))
        return {m.email: (m.role, m.status, m.name) for m in rows}


def _run_job(client) -> int:  # type: ignore[no-untyped-def]
    """One round of the LTI job (passbacks, then the queued roster syncs): what the worker thread does."""
    return int(client.app.state.lti_passback.run_once())


def test_sync_adds_updates_and_drops_but_never_staff(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    teacher = _member("t-1", "Instructor", "prof@uni.example", "Ada Prof")
    platform.members[:] = [
        teacher, _member("ta-1", "Instructor#TeachingAssistant", "ta@uni.example", "Tim TA"),
        _member("s-1", "Learner", "s1@uni.example", "Sam One"), _member("s-2", "Learner", "s2@uni.example", "Sue Two"),
        _member("s-3", "Learner", "s3@uni.example", "Sid Three"),
    ]  # fmt: skip
    # The instructor's launch syncs the roster after its response (all three pages).
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="prof@uni.example",
                           custom={"problem_set": "basic"})  # fmt: skip
    posted = launch(lti_client, platform, claims)
    offering = int(posted.response.headers["location"].rsplit("=", 1)[1])
    roster = _roster(sessions, offering)
    assert roster["ta@uni.example"] == (MemberRole.TA, MemberStatus.ACTIVE, "Tim TA")
    assert {e for e, (role, status, _) in roster.items() if role == MemberRole.STUDENT and status == "active"} == {
        "s1@uni.example",
        "s2@uni.example",
        "s3@uni.example",
    }

    # In the LMS: s-1 renamed, s-2 withdrawn (Inactive), s-3 gone, the TA gone too, s-4 new.
    platform.members[:] = [
        teacher, _member("s-1", "Learner", "s1@uni.example", "Samuel One"),
        _member("s-2", "Learner", "s2@uni.example", "Sue Two", status="Inactive"),
        _member("s-4", "Learner", "s4@uni.example", "Sky Four"),
    ]  # fmt: skip
    page = lti_client.get(f"/offerings/{offering}/lti")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    queued = lti_client.post(f"/offerings/{offering}/lti/sync", data={"csrf_token": token}, follow_redirects=False)
    assert queued.status_code == 303, queued.text  # queued: the request does not wait for the LMS
    waiting = " ".join(lti_client.get(f"/offerings/{offering}/lti").text.split())
    assert "Roster sync: queued" in waiting
    assert _roster(sessions, offering)["s2@uni.example"][1] == MemberStatus.ACTIVE  # nothing applied yet
    assert _run_job(lti_client) == 1
    assert "1 added, 1 updated, 2 dropped" in lti_client.get(f"/offerings/{offering}/lti").text
    roster = _roster(sessions, offering)
    assert roster["s1@uni.example"] == (MemberRole.STUDENT, MemberStatus.ACTIVE, "Samuel One")
    assert roster["s2@uni.example"][1] == roster["s3@uni.example"][1] == MemberStatus.DROPPED
    assert roster["s4@uni.example"][1] == MemberStatus.ACTIVE
    assert roster["ta@uni.example"][1] == MemberStatus.ACTIVE  # staff are never dropped automatically
    assert roster["prof@uni.example"] == (MemberRole.INSTRUCTOR, MemberStatus.ACTIVE, "Ada Prof")


def test_an_empty_roster_drops_nobody_and_students_cannot_sync(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    platform.members[:] = [_member("s-1", "Learner", "s1@uni.example", "Sam One")]
    posted = launch(lti_client, platform, canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1",
                                                        custom={"problem_set": "basic"}))  # fmt: skip
    offering = int(posted.response.headers["location"].rsplit("=", 1)[1])
    platform.members.clear()
    page = lti_client.get(f"/offerings/{offering}/lti")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    lti_client.post(f"/offerings/{offering}/lti/sync", data={"csrf_token": token})
    _run_job(lti_client)
    assert "0 dropped" in lti_client.get(f"/offerings/{offering}/lti").text
    assert _roster(sessions, offering)["s1@uni.example"][1] == MemberStatus.ACTIVE
    lti_client.cookies.clear()
    assert launch(lti_client, platform, canvas_claims(platform, sub="s-1", role="Learner",
                                                      link="rl-1")).response.status_code == 303  # fmt: skip
    assert lti_client.get(f"/offerings/{offering}/lti").status_code == 403


def test_a_failed_sync_shows_its_error_and_a_new_request_runs_again(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    platform.members[:] = [_member("s-1", "Learner", "s1@uni.example", "Sam One")]
    posted = launch(lti_client, platform, canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1",
                                                        custom={"problem_set": "basic"}))  # fmt: skip
    offering = int(posted.response.headers["location"].rsplit("=", 1)[1])
    page = lti_client.get(f"/offerings/{offering}/lti")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    platform.members_failures.append(503)
    lti_client.post(f"/offerings/{offering}/lti/sync", data={"csrf_token": token})
    assert _run_job(lti_client) == 1
    page = lti_client.get(f"/offerings/{offering}/lti").text
    assert "failed" in page and "the LMS did not give the roster" in page and "HTTP 503" in page
    assert _run_job(lti_client) == 0  # a failed sync waits for the instructor
    platform.members.append(_member("s-2", "Learner", "s2@uni.example", "Sue Two"))
    lti_client.post(f"/offerings/{offering}/lti/sync", data={"csrf_token": token})
    assert _run_job(lti_client) == 1
    assert "1 added, 0 updated, 0 dropped" in lti_client.get(f"/offerings/{offering}/lti").text


def test_members_who_are_not_active_get_nothing_written(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """NRPS status Inactive or Deleted, never launched: no account, no LMS identity, no membership is made."""
    platform.members[:] = [
        _member("t-1", "Instructor", "prof@uni.example", "Ada Prof"),
        _member("s-1", "Learner", "s1@uni.example", "Sam One"),
        _member("s-8", "Learner", "s8@uni.example", "Ina Active", status="Inactive"),
        _member("s-9", "Learner", "s9@uni.example", "Del Eted", status="Deleted"),
    ]  # fmt: skip
    posted = launch(lti_client, platform, canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1",
                                                        custom={"problem_set": "basic"}))  # fmt: skip
    offering = int(posted.response.headers["location"].rsplit("=", 1)[1])
    assert set(_roster(sessions, offering)) == {"prof@uni.example", "s1@uni.example"}
    with sessions() as s:
        assert s.scalar(select(LtiUser).where(LtiUser.sub.in_(["s-8", "s-9"]))) is None
        assert s.scalar(select(User).where(User.email.in_(["s8@uni.example", "s9@uni.example"]))) is None
