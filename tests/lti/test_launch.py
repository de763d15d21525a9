"""Launches from the test LMS (Canvas- and Moodle-shaped): who lands where with which membership, and every
spoiled id_token refused with a clear page and nothing written."""

from __future__ import annotations

import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.courses import accounts
from app.courses.models import Course, MemberRole, Membership, MemberSource, MemberStatus
from app.db import utcnow
from app.lti import adapters
from app.lti.models import LtiContext, LtiLaunchState, LtiResourceLink, LtiUser
from app.users.models import User
from tests.lti.conftest import launch
from tests.lti.platform import canvas_claims, moodle_claims

# One app per module and backend (tests/conftest.py): the rows are deleted and the platform registered again before
# each test. Launches keep their state in the database (app/lti/adapters.py), so the twins stay, except for the
# id_token's own checks below.
pytestmark = pytest.mark.shared_app

SHAPES = {"canvas": canvas_claims, "moodle": moodle_claims}


def _counts(sessions) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with sessions() as s:
        return {
            m.__name__: s.scalar(select(func.count()).select_from(m)) or 0
            for m in (User, Membership, LtiUser, LtiContext, LtiResourceLink, Course)
        }


@pytest.mark.parametrize("shape", ["canvas", "moodle"])
def test_instructor_then_student_launch(shape, lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    claims = SHAPES[shape]
    teacher = claims(platform, sub="t-1", role="Instructor", link="rl-1", email="prof@uni.example", name="Ada Prof",
                     custom={"problem_set": "basic"})  # fmt: skip
    first = launch(lti_client, platform, teacher)
    assert first.response.status_code == 303, first.response.text
    target = first.response.headers["location"]
    assert target.startswith("/sets/basic?offering=")
    page = lti_client.get(target)
    assert page.status_code == 200 and "Basic test set" in page.text
    offering_id = int(target.rsplit("=", 1)[1])

    lti_client.cookies.clear()  # another browser
    student = claims(platform, sub="s-1", role="Learner", link="rl-1", email="stud@uni.example", name="Sam Student")
    second = launch(lti_client, platform, student)
    assert second.response.headers["location"] == target  # the resource link remembers its assignment
    assert lti_client.get(target).status_code == 200
    with sessions() as s:
        rows = {m.email: m for m in s.scalars(select(Membership).where(Membership.offering_id == offering_id))}
        assert rows["prof@uni.example"].role == MemberRole.INSTRUCTOR
        assert rows["stud@uni.example"].role == MemberRole.STUDENT
        assert all(m.source == MemberSource.LTI and m.status == MemberStatus.ACTIVE for m in rows.values())
        links = list(s.scalars(select(LtiUser).order_by(LtiUser.sub)))
        assert [(u.issuer, u.sub) for u in links] == [(platform.issuer, "s-1"), (platform.issuer, "t-1")]


def test_a_second_launch_updates_the_role_and_the_same_account(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    launch(lti_client, platform, canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1",
                                               email="p@uni.example", custom={"problem_set": "basic"}))  # fmt: skip
    ta = canvas_claims(platform, sub="u-2", role="Instructor#TeachingAssistant", link="rl-1", email="ta@uni.example")
    assert launch(lti_client, platform, ta).response.status_code == 303
    learner = canvas_claims(platform, sub="u-2", role="Learner", link="rl-1", email="changed@uni.example")
    assert launch(lti_client, platform, learner).response.status_code == 303
    with sessions() as s:
        member = s.scalar(select(Membership).where(Membership.email == "ta@uni.example"))
        assert member is not None and member.role == MemberRole.STUDENT  # the LMS's role now
        assert s.scalar(select(func.count()).select_from(User).where(User.email == "changed@uni.example")) == 0


def test_an_email_alone_never_links_an_existing_account(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """An LMS that asserts the admin's email gets a new, separate account, not the admin's session."""
    launch(lti_client, platform, canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1",
                                               custom={"problem_set": "basic"}))  # fmt: skip
    with sessions() as s:
        from app.users.models import Role

        admin, _ = accounts.create_user(s, email="root@uni.example", role=Role.ADMIN)
        s.commit()
        admin_id = admin.id
    lti_client.cookies.clear()
    posted = launch(lti_client, platform, canvas_claims(platform, sub="x-9", role="Learner", link="rl-1",
                                                        email="root@uni.example"))  # fmt: skip
    assert posted.response.status_code == 303
    me = lti_client.get("/api/v1/auth/me")
    assert me.status_code == 200 and me.json()["id"] != admin_id
    assert me.json()["email"].endswith("@lti.invalid")


def test_a_student_cannot_open_a_course_nobody_set_up(lti_client, platform, sessions) -> None:  # type: ignore[no-untyped-def]
    before = _counts(sessions)
    posted = launch(lti_client, platform, moodle_claims(platform, sub="s-1", role="Learner", link="rl-1"))
    assert posted.response.status_code == 401
    assert "not set up here yet" in posted.response.text
    assert _counts(sessions) == before


@pytest.mark.parametrize(
    ("tamper", "message"),
    [
        ("signature", "Can&#39;t decode id_token"),
        ("audience", "Registration not found"),
        ("azp", "Registration not found"),  # two audiences: the registration is the azp's, another tool's
        ("expired", "Signature has expired"),
        ("deployment", "Unable to find deployment"),
        ("issuer", "Registration not found"),
        ("version", "Incorrect version"),
    ],
)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the token's checks: no backend differs
def test_a_spoiled_id_token_is_refused_with_nothing_written(
    tamper, message, lti_client, platform, sessions, basic_set, caplog
) -> None:  # type: ignore[no-untyped-def]
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="p@uni.example",
                           custom={"problem_set": "basic"})  # fmt: skip
    before = _counts(sessions)
    posted = launch(lti_client, platform, claims, tamper=tamper)
    assert posted.response.status_code == 401
    assert "LTI launch refused" in posted.response.text and message in posted.response.text
    assert _counts(sessions) == before
    assert "user_id" not in lti_client.get("/api/v1/auth/me").text
    assert any("LTI launch refused" in r.getMessage() for r in caplog.records)


def test_a_replayed_id_token_is_refused(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", custom={"problem_set": "basic"})
    posted = launch(lti_client, platform, claims)
    assert posted.response.status_code == 303
    with sessions() as s:  # the launch's state and claims (personal data) are kept an hour at most
        latest = s.scalar(select(func.max(LtiLaunchState.expires_at)))
        assert latest is not None and latest <= utcnow() + timedelta(hours=1, minutes=1)
        assert (
            s.scalar(select(func.count()).select_from(LtiLaunchState).where(LtiLaunchState.key.contains("nonce"))) == 0
        )
    before = _counts(sessions)
    lti_client.cookies.clear()
    again = lti_client.post(posted.action, data={"id_token": posted.id_token, "state": posted.state})
    assert again.status_code == 401
    assert _counts(sessions) == before


def test_a_launch_with_a_state_of_another_browser_is_refused(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", custom={"problem_set": "basic"})
    hint = platform.expect_launch(claims)
    import httpx

    init = lti_client.get("/lti/login", params={"iss": platform.issuer, "login_hint": hint,
                                                "client_id": platform.client_id}, follow_redirects=False)  # fmt: skip
    auth = httpx.get(init.headers["location"], timeout=30)
    import re

    token = re.search(r'name="id_token" value="([^"]+)"', auth.text).group(1)  # type: ignore[union-attr]
    lti_client.cookies.clear()  # the attacker's browser has no state cookie
    answer = lti_client.post("/lti/launch", data={"id_token": token, "state": "state-forged"})
    assert answer.status_code == 401 and "State not found" in answer.text


def test_a_rotated_platform_key_is_refetched(lti_client, platform, basic_set, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(adapters, "JWKS_MIN_REFRESH_S", 3600.0)  # no refetch in this test unless backdated
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", custom={"problem_set": "basic"})
    assert launch(lti_client, platform, claims).response.status_code == 303  # the keyset is cached now
    platform.rotate()
    try:
        # A refetch comes at most once a minute per keyset URL (each unknown kid must not cost a fetch).
        refused = launch(lti_client, platform, claims)
        assert refused.response.status_code == 401 and "public key" in refused.response.text
        adapters.JWKS_CACHE.backdate(3600.0)
        assert launch(lti_client, platform, claims).response.status_code == 303
    finally:
        platform.old_keys.clear()


def test_login_initiation_from_an_unknown_issuer_is_refused(lti_client) -> None:  # type: ignore[no-untyped-def]
    answer = lti_client.get("/lti/login", params={"iss": "https://nobody.example", "login_hint": "x"})
    assert answer.status_code == 401 and "Could not find registration" in answer.text


def test_a_link_naming_a_set_the_launcher_may_not_assign_is_refused(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """Moodle lets instructors edit a link's custom parameters: naming a set is not enough to get it."""
    before = _counts(sessions)
    stranger = moodle_claims(platform, sub="t-9", role="Instructor", link="rl-1", custom={"problem_set": "basic"})
    posted = launch(lti_client, platform, stranger)
    assert posted.response.status_code == 401 and "may not assign" in posted.response.text
    assert _counts(sessions) == before


def test_an_lti_account_has_no_password(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    launch(lti_client, platform, canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1",
                                               custom={"problem_set": "basic"}))  # fmt: skip
    lti_client.cookies.clear()
    launch(
        lti_client, platform, canvas_claims(platform, sub="s-7", role="Learner", link="rl-1", email="s7@uni.example")
    )
    for password in ("", "!lti", "password1"):
        resp = lti_client.post("/api/v1/auth/login", json={"email": "s7@uni.example", "password": password})
        assert resp.status_code in (401, 422)


@pytest.mark.parametrize(
    ("claim", "offset_s", "accepted"),
    [
        ("iat", +30, True),  # the LMS's clock runs 30 s fast: within the default 60 s
        ("iat", +120, False),  # two minutes ahead is no clock error
        ("exp", -30, True),  # just expired by our clock
        ("exp", -120, False),
        ("nbf", +30, True),
        ("nbf", +120, False),
    ],
)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the token's checks: no backend differs
def test_a_platform_clock_a_little_off_is_tolerated(
    claim, offset_s, accepted, lti_client, platform, sessions, basic_set
) -> None:  # type: ignore[no-untyped-def]
    # The edges are a minute away from the 60 s leeway on either side, so the test's own run time moves nothing.
    now = int(time.time())
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="p@uni.example",
                           custom={"problem_set": "basic"})  # fmt: skip
    claims[claim] = now + offset_s
    if claim == "exp":
        claims["iat"] = now - 600
    before = _counts(sessions)
    posted = launch(lti_client, platform, claims)
    if accepted:
        assert posted.response.status_code == 303, posted.response.text
    else:
        assert posted.response.status_code == 401
        assert "LTI launch refused" in posted.response.text
        assert _counts(sessions) == before


def test_the_clock_leeway_is_a_setting(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    lti_client.app.state.settings = lti_client.app.state.settings.model_copy(update={"lti_clock_leeway_s": 0})
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", custom={"problem_set": "basic"})
    claims["iat"] = int(time.time()) + 30
    assert launch(lti_client, platform, claims).response.status_code == 401
