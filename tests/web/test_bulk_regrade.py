"""Bulk regrade: the preview counts the selection by current score, applying requeues it as one batch whose
progress page follows the workers, and only staff who may grade in the offering reach any of it."""

from __future__ import annotations

import html
import re
import time
from collections import Counter

from sqlalchemy import func, select

from app.gradebook.models import RegradeBatch
from app.submissions.models import Grade, Status, Submission
from tests.courses.conftest import world  # noqa: F401
from tests.web.conftest import csrf_of, login


def _submit(client, account, offering: int, b1: str) -> int:  # type: ignore[no-untyped-def]
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": b1, "b2": "32"}, "offering": offering}
    resp = client.post("/api/v1/submissions", json=body, headers=account.headers, params={"wait": 10})
    assert resp.json()["status"] == "graded", resp.text
    return int(resp.json()["id"])


def _statuses(sessions) -> list[str]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return list(session.scalars(select(Submission.status).order_by(Submission.id)))


def test_bulk_regrade_preview_apply_and_progress(client, world, sessions):  # type: ignore[no-untyped-def]  # noqa: F811
    alice, bob = world.people["a:alice"], world.people["a:bob"]
    _submit(client, alice, world.a, "Decoder")
    right = _submit(client, alice, world.a, "Encoder")
    _submit(client, bob, world.a, "Decoder")
    with sessions() as session:  # a grader bug took alice's points: the regrade gives them back
        grade = session.scalar(select(Grade).where(Grade.submission_id == right))
        assert grade is not None and grade.final_score == grade.max_score > 0
        full, grade.auto_score = grade.max_score, 0.0
        session.commit()

    token = login(client, world.people["a:instructor"])
    url = f"/instructor/sets/basic/regrade?offering={world.a}"
    assert url in client.get(f"/instructor/sets/basic/gradebook?offering={world.a}").text
    every = client.get(url + "&problem=t1").text
    assert "<strong>3</strong> submissions of t1 would be regraded" in every
    with sessions() as session:  # the table counts each current final score once per submission
        now = Counter(f"{g.final_score:g}" for g in session.scalars(select(Grade)))
    assert sum(now.values()) == 3 and f"{full:g}" not in now
    for label, n in now.items():
        assert f'<tr><td>{label}</td><td class="num">{n}</td></tr>' in every
    later = client.get(url + "&problem=t1&since=2999-01-01T00:00").text
    assert "<strong>0</strong> submissions" in later and "Regrade 0" not in later
    bad = client.get(url + "&problem=nope")
    assert bad.status_code == 422 and "no problem 'nope'" in html.unescape(bad.text)
    assert client.get(url + "&problem=t1&since=yesterday").status_code == 422

    form = {"problem": "t1", "since": "", "below_full": "on", "expected": "3"}
    assert client.post(url, data=form).status_code == 403  # no CSRF token
    stale = client.post(url, data={**form, "expected": "2", "csrf_token": token})
    assert stale.status_code == 409 and "changed since the preview" in stale.text
    assert _statuses(sessions) == [Status.GRADED] * 3  # nothing requeued by the refused posts
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(RegradeBatch)) == 0

    started = client.post(url, data={**form, "csrf_token": token}, follow_redirects=False)
    assert started.status_code == 303
    progress_url = started.headers["location"]
    assert re.fullmatch(r"/instructor/regrades/\d+", progress_url)
    page = client.get(progress_url).text
    assert 'data-progress="' in page and "of 3 graded again" in page
    deadline = time.monotonic() + 30
    while True:
        live = client.get(progress_url + "/live")
        if live.headers["X-Progress"] == "done" or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert live.headers["X-Progress"] == "done" and "3 of 3 graded again" in live.text
    assert "1 score changed (1 up, 0 down), 2 unchanged." in live.text and f"#{right}" in live.text
    with sessions() as session:
        grade = session.scalar(select(Grade).where(Grade.submission_id == right))
        assert grade is not None and grade.final_score == full

    # Staff of offering B, an observer and a student of A reach neither the preview nor the progress.
    for key, status in (("b:instructor", 404), ("b:ta", 404), ("a:observer", 403), ("a:bob", 403)):
        client.cookies.clear()
        login(client, world.people[key])
        assert client.get(url + "&problem=t1").status_code == status, key
        assert client.get(progress_url).status_code == status, key
        assert client.get(progress_url + "/live").status_code == status, key
        other_token = csrf_of(client.get("/account").text)
        assert client.post(url, data={**form, "csrf_token": other_token}).status_code == status, key
    assert _statuses(sessions) == [Status.GRADED] * 3
