"""Timed assignments: each student's clock starts at their first open (API or page) and ends after the time limit x
their override's time_multiplier, capped by the due date; after it the late policy decides (refused with no late
days, late-penalised with some). Staff start no clock. Time passing is simulated by moving the stored start back."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update

from app.config import Settings
from app.courses.models import AssignmentStart
from app.db import utcnow
from tests.courses.conftest import World
from tests.courses.test_attempts import configure, post
from tests.web.conftest import csrf_of, login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app

ANSWERS = {"b1": "encoder", "b2": "31"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(update={"rate_limits": False})


def _due(client: TestClient, world: World, who: str) -> datetime:
    resp = client.get(f"/api/v1/problem-sets/basic?offering={world.a}", headers=world.people[who].headers)
    assert resp.status_code == 200, resp.text
    return datetime.fromisoformat(resp.json()["due_at"])


def _started_ago(sessions, world: World, who: str, minutes: float) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        session.execute(
            update(AssignmentStart)
            .where(AssignmentStart.user_id == world.people[who].id)
            .values(started_at=utcnow() - timedelta(minutes=minutes))
        )
        session.commit()


def test_the_clock_starts_at_first_open_and_the_multiplier_stretches_it(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    due = utcnow() + timedelta(days=3)
    configure(client, world, time_limit_min=30, max_late_days=0, due_at=due.isoformat())
    staff = world.people["a:instructor"].headers
    resp = client.post(f"/api/v1/assignments/{world.assignment_a}/overrides", headers=staff,
                       json={"email": "alice@example.com", "time_multiplier": 2})  # fmt: skip
    assert resp.status_code == 201 and resp.json()["time_multiplier"] == 2.0

    before = utcnow()
    alice_due, bob_due = _due(client, world, "a:alice"), _due(client, world, "a:bob")
    assert before + timedelta(minutes=59) < alice_due <= utcnow() + timedelta(minutes=60)  # 30 x 2
    assert before + timedelta(minutes=29) < bob_due <= utcnow() + timedelta(minutes=30)
    assert _due(client, world, "a:alice") == alice_due  # a second open keeps the first start
    _due(client, world, "a:instructor")
    with sessions() as session:
        started = set(session.scalars(select(AssignmentStart.user_id)))
    assert started == {world.people["a:alice"].id, world.people["a:bob"].id}  # staff start no clock

    assert post(client, world.people["a:bob"], "t1", ANSWERS).status_code == 202
    _started_ago(sessions, world, "a:bob", 31)
    _started_ago(sessions, world, "a:alice", 31)
    late = post(client, world.people["a:bob"], "t1", ANSWERS)
    assert late.status_code == 403 and "your time at problem set 'basic' ended" in late.json()["detail"][0]["msg"]
    assert post(client, world.people["a:alice"], "t1", ANSWERS).status_code == 202  # her 60 minutes go on
    _started_ago(sessions, world, "a:alice", 61)
    assert post(client, world.people["a:alice"], "t1", ANSWERS).status_code == 403

    # With late days allowed, a submission after the time is late, not refused.
    configure(client, world, max_late_days=2, late_penalty_per_day=0.5)
    resp = post(client, world.people["a:bob"], "t1", ANSWERS)
    assert resp.status_code == 202 and resp.json()["late_penalty"] == 0.5


def test_the_due_date_caps_the_time_and_a_first_submission_starts_the_clock(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    due = (utcnow() + timedelta(minutes=10)).replace(microsecond=0)
    configure(client, world, time_limit_min=120, due_at=due.isoformat())
    assert _due(client, world, "a:alice") == due  # 120 minutes would run past the due date
    # bob never opened the set: his first submission starts his clock.
    assert post(client, world.people["a:bob"], "t1", ANSWERS).status_code == 202
    with sessions() as session:
        assert session.scalar(select(AssignmentStart).where(AssignmentStart.user_id == world.people["a:bob"].id))


def test_timed_settings_and_the_clock_on_the_pages(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    teacher = TestClient(client.app)
    csrf = login(teacher, world.people["a:instructor"])
    url = f"/assignments/{world.assignment_a}/settings"
    form = {"csrf_token": csrf, "open_at": "", "due_at": "", "late_penalty_per_day": "", "max_late_days": "0",
            "max_attempts": "", "cooldown_s": "0", "decay_per_attempt": "0", "counts": "best",
            "release_scores": "immediately", "release_feedback": "immediately", "release_explanation": "immediately",
            "release_answer_key": "after_attempts", "time_limit_min": "45"}  # fmt: skip
    assert "Saved." in teacher.post(url, data=form).text
    assert 'name="time_limit_min" value="45"' in teacher.get(url).text
    bad = teacher.post(url, data={**form, "time_limit_min": "0"})
    assert bad.status_code == 422 and "time_limit_min" in bad.text
    added = teacher.post(f"/assignments/{world.assignment_a}/overrides", follow_redirects=False,
                         data={"csrf_token": csrf, "email": "alice@example.com", "time_multiplier": "1.5"})  # fmt: skip
    assert added.status_code == 303
    assert "<td>1.5</td>" in teacher.get(url).text
    refused = teacher.post(f"/assignments/{world.assignment_a}/overrides",
                           data={"csrf_token": csrf, "email": "bob@example.com", "time_multiplier": "20"})  # fmt: skip
    assert refused.status_code == 422 and "between 1 and 10" in refused.text

    alice = TestClient(client.app)
    login(alice, world.people["a:alice"])
    page = alice.get(f"/sets/basic?offering={world.a}").text
    assert "timed: 45 minutes" in page and "your time ends" in page
    _started_ago(sessions, world, "a:alice", 68)  # 45 x 1.5 = 67.5 minutes
    answers = {"csrf_token": csrf_of(page), "offering": str(world.a), "answer.b1": "encoder", "answer.b2": "31"}
    resp = alice.post("/sets/basic/problems/t1", data=answers)
    assert resp.status_code == 403 and "your time at problem set" in resp.text
    assert 'value="encoder"' in resp.text  # back on the set page, the answers as typed


def test_reading_one_problem_through_the_api_starts_the_clock(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    # The attack: read every prompt through /problems/{id} without opening the set, then open it only to submit.
    configure(client, world, time_limit_min=30, due_at=(utcnow() + timedelta(days=3)).isoformat())
    alice = world.people["a:alice"]
    resp = client.get(f"/api/v1/problem-sets/basic/problems/t1?offering={world.a}", headers=alice.headers)
    assert resp.status_code == 200, resp.text
    with sessions() as session:
        started = session.scalar(select(AssignmentStart.started_at).where(AssignmentStart.user_id == alice.id))
    assert started is not None
    assert _due(client, world, "a:alice") <= started + timedelta(minutes=30)


def test_a_link_from_another_site_does_not_start_the_clock(client, sessions, world: World) -> None:  # type: ignore[no-untyped-def]
    # The attack: a classmate's page links to (or navigates to) the timed set; the student's cookie comes along.
    configure(client, world, time_limit_min=30, due_at=(utcnow() + timedelta(days=3)).isoformat())
    alice = TestClient(client.app)
    login(alice, world.people["a:alice"])
    url = f"/sets/basic?offering={world.a}"

    def started() -> object:
        with sessions() as session:
            return session.scalar(
                select(AssignmentStart.started_at).where(AssignmentStart.user_id == world.people["a:alice"].id)
            )

    page = alice.get(url, headers={"sec-fetch-site": "cross-site"})
    assert page.status_code == 200 and "your time has not started" in page.text
    assert 'name="answer.b1"' not in page.text and started() is None  # no prompt, no clock
    api = alice.get(f"/api/v1/problem-sets/basic?offering={world.a}", headers={"sec-fetch-site": "same-site"})
    assert api.status_code == 403 and started() is None
    opened = alice.get(url, headers={"sec-fetch-site": "same-origin"})  # the page's own link
    assert opened.status_code == 200 and 'name="answer.b1"' in opened.text and started() is not None
    # Once started, another site's link just shows the set.
    assert 'name="answer.b1"' in alice.get(url, headers={"sec-fetch-site": "cross-site"}).text
