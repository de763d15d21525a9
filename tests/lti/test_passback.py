"""The loop an LMS course runs: launch, submit, grade, and the score arrives at the platform's line item; retries
on 429, a regrade and a manual grade update it (PendingManual, then FullyGraded)."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select

from app.lti.models import LtiPassback, LtiResourceLink
from app.submissions.models import Grade
from tests.lti.conftest import launch
from tests.lti.platform import canvas_claims, moodle_claims


def _scores(client, platform, item: str, count: int) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """Drive the passback sender until the platform holds ``count`` scores for the line item (bounded, not timed)."""
    sender = client.app.state.lti_passback
    for _ in range(200):
        got = platform.scores.get(item, [])
        if len(got) >= count:
            return list(got)
        if not sender.run_once():
            time.sleep(0.02)
    raise AssertionError(f"the platform has {platform.scores.get(item)} for {item}, expected {count} score(s)")


def _course(client, platform, shape=canvas_claims, lineitem: str | None = None) -> str:  # type: ignore[no-untyped-def]
    teacher = shape(platform, sub="t-1", role="Instructor", link="rl-1", email="prof@uni.example",
                    custom={"problem_set": "basic"}, lineitem=lineitem)  # fmt: skip
    posted = launch(client, platform, teacher)
    assert posted.response.status_code == 303, posted.response.text
    return posted.response.headers["location"]


def _as_student(client, platform, shape=canvas_claims, lineitem: str | None = None) -> None:  # type: ignore[no-untyped-def]
    client.cookies.clear()
    claims = shape(platform, sub="s-1", role="Learner", link="rl-1", email="sam@uni.example", lineitem=lineitem)
    assert launch(client, platform, claims).response.status_code == 303


def _submit(client, problem: str, answers: dict[str, str]) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/submissions?wait=10", json={"problem_set": "basic", "problem": problem,
                                                            "answers": answers})  # fmt: skip
    assert resp.status_code in (200, 202), resp.text
    return dict(resp.json())


def _due_a_day_and_a_half_ago(client, sessions) -> int:  # type: ignore[no-untyped-def]
    """The linked assignment, due 1.5 days ago with 20 % a day off (two days late, as late days round up)."""
    with sessions() as s:
        assignment_id = s.scalar(select(LtiResourceLink.assignment_id))
    due = (datetime.now(UTC) - timedelta(days=1.5)).isoformat()
    changed = client.patch(f"/api/v1/assignments/{assignment_id}",
                           json={"due_at": due, "late_penalty_per_day": 0.2, "max_late_days": 10})  # fmt: skip
    assert changed.status_code == 200, changed.text
    return int(assignment_id)


def test_launch_submit_grade_passback(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    item_url = platform.add_lineitem("Homework 1", 8.0, "rl-1")
    item = item_url.rsplit("/", 1)[1]
    _course(lti_client, platform, lineitem=item_url)
    _as_student(lti_client, platform, lineitem=item_url)
    sub = _submit(lti_client, "t2", {"b1": "B"})
    assert sub["status"] == "graded"
    [score] = _scores(lti_client, platform, item, 1)
    assert score["userId"] == "s-1"
    assert (score["scoreGiven"], score["scoreMaximum"]) == (2.0, 8.0)
    assert (score["activityProgress"], score["gradingProgress"]) == ("InProgress", "FullyGraded")
    # The tool signed a client assertion the platform verified, and asked for the score scope only.
    assert platform.assertions and platform.assertions[-1]["iss"] == platform.client_id
    wrong_then_right = _submit(lti_client, "t1", {"b1": "decoder", "b2": "32"})
    assert wrong_then_right["status"] == "graded"
    second = _scores(lti_client, platform, item, 2)[-1]
    assert second["scoreGiven"] == 4.0 and second["timestamp"] > score["timestamp"]
    with sessions() as s:
        row = s.scalar(select(LtiPassback))
        assert row is not None and row.status == "sent" and row.sent_version == row.version


def test_a_429_then_200_is_retried_after_retry_after(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    item_url = platform.add_lineitem("Homework 1", 8.0, "rl-1")
    item = item_url.rsplit("/", 1)[1]
    _course(lti_client, platform, lineitem=item_url)
    _as_student(lti_client, platform, lineitem=item_url)
    platform.score_failures.extend([(429, {"Retry-After": "0"}), (503, {})])
    _submit(lti_client, "t2", {"b1": "B"})
    [score] = _scores(lti_client, platform, item, 1)
    assert score["scoreGiven"] == 2.0
    assert platform.score_failures == []  # both failures were answered before the score was taken


def test_a_4xx_fails_at_once_and_an_instructor_retries(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    item_url = platform.add_lineitem("Homework 1", 8.0, "rl-1")
    item = item_url.rsplit("/", 1)[1]
    offering = int(_course(lti_client, platform, lineitem=item_url).rsplit("=", 1)[1])
    teacher_cookies = dict(lti_client.cookies)
    _as_student(lti_client, platform, lineitem=item_url)
    platform.score_failures.append((400, {}))
    _submit(lti_client, "t2", {"b1": "B"})
    sender = lti_client.app.state.lti_passback
    for _ in range(200):
        with sessions() as s:
            row = s.scalar(select(LtiPassback))
            if row is not None and row.status == "failed":
                break
        sender.run_once()
        time.sleep(0.01)
    assert row is not None and row.status == "failed" and row.last_status_code == 400 and "HTTP 400" in row.last_error
    lti_client.cookies.clear()
    lti_client.cookies.update(teacher_cookies)
    page = lti_client.get(f"/offerings/{offering}/lti")
    assert page.status_code == 200 and "sam@uni.example" in page.text and "HTTP 400" in page.text
    assert "http://testserver/lti/login" in page.text and "http://testserver/lti/jwks" in page.text
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    retried = lti_client.post(f"/offerings/{offering}/lti/passback/{row.id}/retry", data={"csrf_token": token},
                              follow_redirects=False)  # fmt: skip
    assert retried.status_code == 303
    [score] = _scores(lti_client, platform, item, 1)
    assert score["scoreGiven"] == 2.0


def test_manual_grading_goes_pending_manual_then_fully_graded(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    """Moodle-shaped, and without a line item in the launch: the tool creates one through the line items URL."""
    _course(lti_client, platform, shape=moodle_claims)
    teacher_cookies = dict(lti_client.cookies)
    _as_student(lti_client, platform, shape=moodle_claims)
    essay = _submit(lti_client, "t3", {"b1": "We held the split equal."})
    [item] = list(platform.lineitems) or [None]
    for _ in range(200):
        if platform.lineitems and platform.scores:
            break
        lti_client.app.state.lti_passback.run_once()
        time.sleep(0.01)
    [item] = list(platform.lineitems)
    assert platform.lineitems[item]["resourceLinkId"] == "rl-1" and platform.lineitems[item]["scoreMaximum"] == 8.0
    [pending] = _scores(lti_client, platform, item, 1)
    assert (pending["activityProgress"], pending["gradingProgress"]) == ("Submitted", "PendingManual")
    assert "scoreGiven" not in pending  # not a 0 while the essay waits for a grader
    lti_client.cookies.clear()
    lti_client.cookies.update(teacher_cookies)
    graded = lti_client.post(f"/api/v1/submissions/{essay['id']}/manual-grade", json={"manual_score": 2.5,
                                                                                      "feedback": "ok"})  # fmt: skip
    assert graded.status_code == 200, graded.text
    final = _scores(lti_client, platform, item, 2)[-1]
    assert (final["scoreGiven"], final["gradingProgress"]) == (2.5, "FullyGraded")


def test_a_regrade_under_a_late_penalty_posts_the_new_score(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """The due date moves into the past (20 % a day); the regrade recomputes the late penalty and the LMS gets it."""
    item_url = platform.add_lineitem("Homework 1", 8.0, "rl-1")
    item = item_url.rsplit("/", 1)[1]
    _course(lti_client, platform, lineitem=item_url)
    teacher_cookies = dict(lti_client.cookies)
    _as_student(lti_client, platform, lineitem=item_url)
    sub = _submit(lti_client, "t2", {"b1": "B"})
    assert _scores(lti_client, platform, item, 1)[0]["scoreGiven"] == 2.0
    lti_client.cookies.clear()
    lti_client.cookies.update(teacher_cookies)
    _due_a_day_and_a_half_ago(lti_client, sessions)
    assert lti_client.post(f"/api/v1/submissions/{sub['id']}/regrade").status_code in (200, 202)
    again = _scores(lti_client, platform, item, 2)
    assert again[-1]["scoreGiven"] == pytest.approx(1.2)  # 2 points, two days late at 20 % a day
    assert again[-1]["timestamp"] > again[0]["timestamp"]


def test_an_override_reposts_the_students_score(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    """A late submission (20 % a day, two days) posts 1.2; an extension for that student posts 2.0 (its late
    penalty recomputed), and removing the extension posts 1.2 again."""
    item_url = platform.add_lineitem("Homework 1", 8.0, "rl-1")
    item = item_url.rsplit("/", 1)[1]
    _course(lti_client, platform, lineitem=item_url)
    teacher_cookies = dict(lti_client.cookies)
    assignment_id = _due_a_day_and_a_half_ago(lti_client, sessions)
    _as_student(lti_client, platform, lineitem=item_url)
    _submit(lti_client, "t2", {"b1": "B"})
    assert _scores(lti_client, platform, item, 1)[0]["scoreGiven"] == pytest.approx(1.2)
    lti_client.cookies.clear()
    lti_client.cookies.update(teacher_cookies)
    later = (datetime.now(UTC) + timedelta(days=3)).isoformat()
    extension = lti_client.post(f"/api/v1/assignments/{assignment_id}/overrides",
                                json={"email": "sam@uni.example", "due_at": later})  # fmt: skip
    assert extension.status_code == 201, extension.text
    extended = _scores(lti_client, platform, item, 2)[-1]
    assert extended["userId"] == "s-1" and extended["scoreGiven"] == 2.0
    gone = lti_client.delete(f"/api/v1/overrides/{extension.json()['id']}")
    assert gone.status_code == 204, gone.text
    assert _scores(lti_client, platform, item, 3)[-1]["scoreGiven"] == pytest.approx(1.2)
    with sessions() as s:  # the stored grade counts what the LMS was sent
        assert s.scalar(select(Grade.late_penalty)) == pytest.approx(0.4)


def test_a_database_outage_is_logged_once_when_it_goes_and_once_when_it_is_back(lti_settings, sessions, caplog) -> None:  # type: ignore[no-untyped-def]
    """The sender's database refuses connections for several polls (a closed port), then answers again: one
    warning and one info line, no traceback per poll; another failure still gets its traceback."""
    import logging
    import socket

    from app.db import make_engine, make_session_factory
    from app.lti.sender import PassbackSender

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dead = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{port}/gone")
    sender = PassbackSender(lti_settings, make_session_factory(dead))
    caplog.set_level(logging.INFO, logger="app.lti.sender")
    try:
        assert [sender.poll() for _ in range(4)] == [0, 0, 0, 0]
        sender.session_factory = sessions  # the database is back
        assert sender.poll() == 0 and sender.poll() == 0
    finally:
        dead.dispose()
    mine = [r for r in caplog.records if r.name == "app.lti.sender"]
    lines = [(r.levelname, r.getMessage(), r.exc_info is not None) for r in mine]
    assert len(lines) == 2, lines
    assert lines[0][0] == "WARNING" and "database unavailable" in lines[0][1] and not lines[0][2]
    assert lines[1] == ("INFO", "LTI passback sender: the database answers again", False)

    def broken() -> int:
        raise RuntimeError("a bug")

    caplog.clear()
    sender.run_once = broken  # type: ignore[method-assign]
    assert sender.poll() == 0
    assert [r.exc_info is not None for r in caplog.records if r.name == "app.lti.sender"] == [True]


def test_passback_posts_the_grade_the_students_own_variant_gave(lti_client, platform, sessions) -> None:  # type: ignore[no-untyped-def]
    """Seed 001's Q4 through an LMS course: the student's own numbers score full marks and the set's own (seed 0)
    numbers do not (unless they are hers), and the platform gets exactly those scores."""
    from app.courses import course_sets
    from app.problemsets.variants import close_variant_checkers, variant_checkers
    from tests.app.test_variants import TODAY, numbers_in
    from tests.conftest import REPO

    settings = lti_client.app.state.settings
    with sessions() as session:
        _, report, _ = course_sets.load_dir(
            session, root=REPO / "problems" / "attention", grader=None, variants=variant_checkers(settings)
        )
        session.commit()
    assert report.ok, report.render_text()
    try:
        item_url = platform.add_lineitem("Attention", 8.0, "rl-1")
        item = item_url.rsplit("/", 1)[1]
        teacher = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="prof@uni.example",
                                custom={"problem_set": "attention"}, lineitem=item_url)  # fmt: skip
        assert launch(lti_client, platform, teacher).response.status_code == 303
        _as_student(lti_client, platform, lineitem=item_url)
        view = lti_client.get("/api/v1/problem-sets/attention/problems/q4")
        assert view.status_code == 200, view.text
        mine = numbers_in(view.json()["prompt"])

        def send(answers: dict[str, str]) -> float:
            resp = lti_client.post("/api/v1/submissions?wait=30",
                                   json={"problem_set": "attention", "problem": "q4", "answers": answers})  # fmt: skip
            assert resp.status_code in (200, 202) and resp.json()["status"] == "graded", resp.text
            return float(resp.json()["score"])

        others = send(TODAY.answers())
        assert (others < 8.0) == (mine != TODAY)
        [first] = _scores(lti_client, platform, item, 1)
        assert first["scoreGiven"] == others
        assert send(mine.answers()) == 8.0
        assert _scores(lti_client, platform, item, 2)[-1]["scoreGiven"] == 8.0
    finally:
        close_variant_checkers()
