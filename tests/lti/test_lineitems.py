"""One line item per resource link, whatever the number of senders: two passback senders (each with its own
engine, as in `autograder serve` plus `autograder worker`) post the scores of one link launched without a line
item, and the test LMS ends with one line item holding both; a claim whose holder died is taken over and the
item it made is found in the container, not made twice."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from sqlalchemy import func, select

from app.db import make_engine, make_session_factory, utcnow
from app.lti import lineitems
from app.lti.models import LtiContext, LtiLineItem, LtiPassback, LtiResourceLink
from app.lti.sender import PassbackSender
from tests.lti.conftest import launch
from tests.lti.platform import canvas_claims

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def _course_and_two_students(client, platform) -> None:  # type: ignore[no-untyped-def]
    """A Canvas link launched without an AGS line item, and two students who each submit once."""
    teacher = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="prof@uni.example",
                            custom={"problem_set": "basic"})  # fmt: skip
    assert launch(client, platform, teacher).response.status_code == 303
    for sub in ("s-1", "s-2"):
        client.cookies.clear()
        student = canvas_claims(platform, sub=sub, role="Learner", link="rl-1", email=f"{sub}@uni.example")
        assert launch(client, platform, student).response.status_code == 303
        answer = client.post("/api/v1/submissions?wait=10",
                             json={"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}})  # fmt: skip
        assert answer.status_code in (200, 202), answer.text


def _drive(senders: list[PassbackSender], platform, scores: int) -> None:  # type: ignore[no-untyped-def]
    """Run the senders in turn until the platform holds ``scores`` scores (bounded; a deferred row waits 1 s)."""
    for _ in range(400):
        if sum(len(v) for v in platform.scores.values()) >= scores:
            return
        if not sum(s.run_once() for s in senders):
            time.sleep(0.02)
    raise AssertionError(f"the platform has {platform.scores}, expected {scores} score(s)")


def test_two_senders_make_one_line_item_for_one_link(lti_client, lti_settings, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    _course_and_two_students(lti_client, platform)
    with sessions() as s:
        assert s.scalar(select(func.count()).select_from(LtiPassback).where(LtiPassback.status == "pending")) == 2
    engines = [make_engine(lti_settings.resolved_database_url) for _ in range(2)]
    first, second = (PassbackSender(lti_settings, make_session_factory(e)) for e in engines)
    try:
        # The first sender holds the link's claim and waits inside its container lookup at the platform ...
        platform.container_gate = threading.Event()
        holder = threading.Thread(target=first.run_once)
        holder.start()
        assert platform.container_reached.wait(30)
        # ... while the second sender takes the other student's row: it finds the claim taken and waits its turn,
        # without asking the platform anything and without spending an attempt.
        assert second.run_once() == 1
        assert platform.container_gets == 1 and platform.lineitem_posts == 0
        with sessions() as s:
            rows = list(s.scalars(select(LtiPassback).order_by(LtiPassback.id)))
            assert [r.attempts for r in rows] == [0, 0] and all(r.status == "pending" for r in rows)
        platform.container_gate.set()
        holder.join(30)
        assert not holder.is_alive()
        _drive([first, second], platform, 2)
    finally:
        platform.container_gate = None
        for e in engines:
            e.dispose()
    assert platform.lineitem_posts == 1
    [(item_id, item)] = platform.lineitems.items()
    assert item["resourceLinkId"] == "rl-1" and item["tag"] == lineitems.TAG
    assert sorted(score["userId"] for score in platform.scores[item_id]) == ["s-1", "s-2"]
    with sessions() as s:
        [row] = s.scalars(select(LtiLineItem))
        assert row.lineitem_url == item["id"] and row.claimed_until is None and row.resource_link_id == "rl-1"
        assert s.scalar(select(LtiResourceLink.lineitem_url)) == item["id"]


def _claim_row(sessions, platform, claimed_until) -> None:  # type: ignore[no-untyped-def]
    """The link's lti_lineitem row as a sender left it: claimed until ``claimed_until``, no URL recorded."""
    with sessions() as s:
        ctx = s.scalars(select(LtiContext)).one()
        s.add(LtiLineItem(platform_id=ctx.platform_id, deployment_id=ctx.deployment_id, context_id=ctx.context_id,
                          resource_link_id="rl-1", claimed_until=claimed_until))  # fmt: skip
        s.commit()


def test_a_claim_whose_holder_died_is_taken_over_and_its_item_found(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """The holder made the line item on the platform and died before recording it; its claim ran out. The next
    sender looks in the container first (ours by tag, not another link's or another tool's item) and posts there."""
    _course_and_two_students(lti_client, platform)
    _claim_row(sessions, platform, utcnow() - timedelta(seconds=1))
    platform.add_lineitem("Other link", 5.0, "rl-other", tag=lineitems.TAG)
    platform.add_lineitem("Another tool's column", 8.0, "rl-1", tag="other-tool")
    made = platform.add_lineitem("Homework 1", 8.0, "rl-1", tag=lineitems.TAG)
    _drive([lti_client.app.state.lti_passback], platform, 2)
    assert platform.lineitem_posts == 0 and len(platform.lineitems) == 3
    assert sorted(s["userId"] for s in platform.scores[made.rsplit("/", 1)[1]]) == ["s-1", "s-2"]
    with sessions() as s:
        assert s.scalar(select(LtiLineItem.lineitem_url)) == made


def test_a_live_claim_makes_the_sender_wait_without_asking_the_lms(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    _course_and_two_students(lti_client, platform)
    _claim_row(sessions, platform, utcnow() + timedelta(seconds=lineitems.CLAIM_S))
    assert lti_client.app.state.lti_passback.run_once() == 2
    assert platform.container_gets == platform.lineitem_posts == 0 and platform.scores == {}
    with sessions() as s:
        rows = list(s.scalars(select(LtiPassback)))
        assert all(r.status == "pending" and r.attempts == 0 and r.next_attempt_at > utcnow() for r in rows)
