"""Passback follows the release policy: a score the student may not see on our pages is not posted to the LMS
("held until release" on the LMS page), and a release posts it: a change of the policy at once, a release after
the due date when that date has come (the LTI job looks again then)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import select, update

from app.courses.models import Assignment
from app.db import utcnow
from app.lti.models import LtiPassback, LtiResourceLink
from tests.lti.test_passback import _as_student, _course, _scores, _submit

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _setup(client, platform, sessions, **policy):  # type: ignore[no-untyped-def]
    """A linked course whose assignment has ``policy``; returns (the teacher's cookies, offering id, line item id,
    assignment id)."""
    item_url = platform.add_lineitem("Homework 1", 8.0, "rl-1")
    offering = int(_course(client, platform, lineitem=item_url).rsplit("=", 1)[1])
    teacher = dict(client.cookies)
    with sessions() as s:
        assignment_id = int(s.scalar(select(LtiResourceLink.assignment_id)))  # type: ignore[arg-type]
    changed = client.patch(f"/api/v1/assignments/{assignment_id}", json=policy)
    assert changed.status_code == 200, changed.text
    return teacher, offering, item_url.rsplit("/", 1)[1], assignment_id


def _as(client, cookies) -> None:  # type: ignore[no-untyped-def]
    client.cookies.clear()
    client.cookies.update(cookies)


def _held(sessions) -> LtiPassback:  # type: ignore[no-untyped-def]
    with sessions() as s:
        row = s.scalars(select(LtiPassback)).one()
        s.expunge(row)
        return row


def test_scores_released_never_are_held_until_a_policy_releases_them(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    teacher, offering, item, assignment_id = _setup(lti_client, platform, sessions, release_scores="never")
    _as_student(lti_client, platform)
    sub = _submit(lti_client, "t2", {"b1": "B"})
    assert sub["status"] == "graded" and sub["final_score"] is None  # the student's own view: sealed
    sender = lti_client.app.state.lti_passback
    for _ in range(5):
        sender.run_once()
    assert platform.scores == {}  # nothing posted while the student may not see it
    row = _held(sessions)
    assert (row.status, row.score, row.next_attempt_at) == ("held", 2.0, None)  # no date will release it
    _as(lti_client, teacher)
    page = " ".join(lti_client.get(f"/offerings/{offering}/lti").text.split())
    assert "held until release" in page
    # An instructor's retry does not post a held score.
    token = page.split('name="csrf_token" value="')[1].split('"')[0]
    lti_client.post(f"/offerings/{offering}/lti/passback/{row.id}/retry", data={"csrf_token": token})
    sender.run_once()
    assert platform.scores == {} and _held(sessions).status == "held"
    # The release: the policy now shows scores, and the held one is posted.
    released = lti_client.patch(f"/api/v1/assignments/{assignment_id}", json={"release_scores": "immediately"})
    assert released.status_code == 200, released.text
    [score] = _scores(lti_client, platform, item, 1)
    assert (score["userId"], score["scoreGiven"], score["gradingProgress"]) == ("s-1", 2.0, "FullyGraded")
    assert _held(sessions).status == "sent"


def test_a_release_after_the_due_date_posts_when_the_date_comes(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    due = utcnow() + timedelta(days=2)
    _, _, item, assignment_id = _setup(lti_client, platform, sessions, release_scores="after_due",
                                       due_at=due.isoformat())  # fmt: skip
    _as_student(lti_client, platform)
    _submit(lti_client, "t2", {"b1": "B"})
    sender = lti_client.app.state.lti_passback
    sender.run_once()
    row = _held(sessions)
    assert row.status == "held" and row.next_attempt_at == due  # looked at again when the date comes
    assert sender.run_once() == 0 and platform.scores == {}  # not before
    with sessions() as s:  # two days pass: the due date is behind us, and so is the row's time to look again
        past = utcnow() - timedelta(minutes=1)
        s.execute(update(Assignment).where(Assignment.id == assignment_id).values(due_at=past))
        s.execute(update(LtiPassback).values(next_attempt_at=past))
        s.commit()
    [score] = _scores(lti_client, platform, item, 1)
    assert score["scoreGiven"] == 2.0
    assert _held(sessions).status == "sent"


def test_a_score_released_by_attempts_posts_once_they_run_out(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """After the attempts: held while the student may try again, posted with the attempt that uses the last one."""
    _, _, item, _ = _setup(lti_client, platform, sessions, release_scores="after_attempts", max_attempts=2)
    _as_student(lti_client, platform)
    _submit(lti_client, "t1", {"b1": "decoder", "b2": "1"})
    lti_client.app.state.lti_passback.run_once()
    assert platform.scores == {} and _held(sessions).status == "held"
    _submit(lti_client, "t1", {"b1": "decoder", "b2": "2"})
    [score] = _scores(lti_client, platform, item, 1)
    assert score["gradingProgress"] == "FullyGraded" and "scoreGiven" in score


def test_pending_manual_carries_no_score_even_with_automatic_points(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """docs/lti.md: a counted attempt whose rubric nobody scored sends PendingManual without scoreGiven, also when
    other problems already earned automatic points (the LMS must not show a partial total as the grade)."""
    item_url = platform.add_lineitem("Homework 1", 8.0, "rl-1")
    item = item_url.rsplit("/", 1)[1]
    _course(lti_client, platform, lineitem=item_url)
    _as_student(lti_client, platform, lineitem=item_url)
    _submit(lti_client, "t2", {"b1": "B"})
    assert _scores(lti_client, platform, item, 1)[0]["scoreGiven"] == 2.0
    _submit(lti_client, "t3", {"b1": "We held the split equal."})
    pending = _scores(lti_client, platform, item, 2)[-1]
    assert pending["gradingProgress"] == "PendingManual" and "scoreGiven" not in pending
