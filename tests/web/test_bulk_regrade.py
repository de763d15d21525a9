"""Bulk regrade: the preview counts the selection by current score and, for answer problems, predicts (grading
in process, writing nothing) how each score would change against the current version; applying requeues it as one
batch whose progress page follows the workers, and only staff who may grade in the offering reach any of it."""

from __future__ import annotations

import html
import re
import shutil
import time
from collections import Counter

from sqlalchemy import func, select

from app.courses import course_sets
from app.courses import service as courses
from app.courses.access import access_for
from app.gradebook import bulk_regrade
from app.gradebook.models import RegradeBatch
from app.submissions.models import CheckResultRow, Grade, Status, Submission
from app.users.models import User
from tests.conftest import FIXTURE_SETS
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


def _snapshot(sessions) -> tuple[list[tuple[object, ...]], ...]:  # type: ignore[no-untyped-def]
    """Every row a regrade (or a preview that wrote) would touch."""
    with sessions() as session:
        sub, grade = Submission, Grade
        subs = session.execute(select(sub.id, sub.status, sub.problem_set_version_id, sub.claimed_by).order_by(sub.id))
        grades = session.execute(
            select(grade.id, grade.submission_id, grade.auto_score, grade.late_penalty, grade.graded_at).order_by(
                grade.id
            )
        )
        checks = session.execute(select(CheckResultRow.id, CheckResultRow.score).order_by(CheckResultRow.id))
        batches = session.execute(select(RegradeBatch.id))
        return tuple([tuple(r) for r in rows] for rows in (subs, grades, checks, batches))


def _finals(sessions) -> dict[int, float]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return {g.submission_id: g.final_score for g in session.scalars(select(Grade))}


def test_preview_predicts_what_applying_a_new_answer_key_changes(client, world, sessions, settings, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    alice, bob = world.people["a:alice"], world.people["a:bob"]
    wrong = _submit(client, alice, world.a, "Decoder")  # accepted by version 2
    right = _submit(client, alice, world.a, "Encoder")  # right in both
    chinese = _submit(client, bob, world.a, "编码器")  # dropped from version 2's key
    never = _submit(client, bob, world.a, "transformer")  # wrong in both
    first = _finals(sessions)
    assert first[wrong] < first[right] and first[chinese] > first[never]

    # Version 2 of the set accepts "decoder" and no longer accepts the Chinese alias.
    root = tmp_path / "basic"
    shutil.copytree(FIXTURE_SETS / "basic", root)
    spec = (root / "problemset.yaml").read_text(encoding="utf-8")
    old_key = "answers: [encoder, 编码器]\n        accept: [Encoder, 编码器。]\n        reject: [decoder]"
    assert old_key in spec
    new_key = "answers: [encoder, decoder]\n        accept: [Encoder, Decoder]\n        reject: [编码器, transformer]"
    (root / "problemset.yaml").write_text(spec.replace(old_key, new_key).replace('version: "1"', 'version: "2"'))
    with sessions() as session:
        version, report, _ = course_sets.load_dir(session, root=root, grader=None)
        assert report.ok, report
        session.commit()
        assignment = courses.default_assignment(session, version.problem_set)
        assert courses.version_of(session, assignment).id == version.id  # the current version is the new one

    login(client, world.people["a:instructor"])
    url = f"/instructor/sets/basic/regrade?offering={world.a}"
    before = _snapshot(sessions)
    page = html.unescape(client.get(url + "&problem=t1").text)
    assert _snapshot(sessions) == before  # the preview graded four submissions and wrote nothing
    found = re.search(r"(\d+) would go up, (\d+) down, (\d+) stay the same; total change ([-+\d.e]+) points", page)
    assert found is not None, page
    up, down, same, total = int(found[1]), int(found[2]), int(found[3]), float(found[4])
    table = page.split('class="preview-changes"')[1].split("</table>")[0]
    rows = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td class=\"num\">(\d+)", table)
    predicted = Counter({(b, a): int(n) for b, a, n in rows})
    assert (up, down, same) == (1, 1, 2)  # the change is real, not a preview that predicts nothing
    with sessions() as session:  # a selection over the limit is not graded in the page
        access = access_for(session, session.get(User, world.people["a:instructor"].id))
        selection = bulk_regrade.select_for_regrade(session, access=access, slug="basic", offering_id=world.a,
                                                    problem_id="t1")  # fmt: skip
        capped = bulk_regrade.predict(session, settings, selection, limit=3)
        assert capped.too_many and not capped.known and not capped.after
        assert bulk_regrade.predict(session, settings, selection, limit=4).up == up
    assert _snapshot(sessions) == before

    token = csrf_of(client.get(url).text)
    form = {"problem": "t1", "since": "", "below_full": "", "expected": "4", "csrf_token": token}
    started = client.post(url, data=form, follow_redirects=False)
    assert started.status_code == 303
    deadline = time.monotonic() + 30
    while client.get(started.headers["location"] + "/live").headers["X-Progress"] != "done":
        assert time.monotonic() < deadline, "the regrade did not finish"
        time.sleep(0.05)

    after = _finals(sessions)
    moved = {sid: after[sid] - first[sid] for sid in first if abs(after[sid] - first[sid]) > 1e-9}
    assert sum(1 for d in moved.values() if d > 0) == up and sum(1 for d in moved.values() if d < 0) == down
    assert len(first) - len(moved) == same and set(moved) == {wrong, chinese}
    assert abs(sum(moved.values()) - total) < 1e-6
    assert predicted == Counter((f"{first[s]:g}", f"{after[s]:g}") for s in moved)
    with sessions() as session:  # applied against the version the preview graded against
        assert set(session.scalars(select(Submission.problem_set_version_id))) == {version.id}


def test_preview_of_a_code_problem_offers_a_trial_run_instead_of_grading_it(client, world, sessions):  # type: ignore[no-untyped-def]  # noqa: F811
    with sessions() as session:  # no sandbox here: a graded code submission is stored as the worker leaves one
        version, _, _ = course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        assignment = courses.default_assignment(session, version.problem_set)
        alice = session.get(User, world.people["a:alice"].id)
        assert alice is not None
        code = {"code": "raise SystemExit(1)"}
        sub = Submission(user_id=alice.id, problem_set_version_id=version.id, assignment_id=assignment.id,
                         problem_id="c1", payload=code, status=Status.GRADED)  # fmt: skip
        session.add(sub)
        session.flush()
        session.add(Grade(submission_id=sub.id, auto_score=0.0, max_score=1.0, verdict="rejected", message=""))
        session.commit()
    login(client, world.people["a:instructor"])
    before = _snapshot(sessions)
    page = client.get(f"/instructor/sets/codeset/regrade?offering={world.a}&problem=c1").text
    assert "<strong>1</strong> submission of c1 would be regraded" in page
    assert "too slow to grade in this page" in page and "would go up" not in page
    assert "Trial run: grade 1 submission against the current version" in page  # tests/web/test_trial_regrade.py
    assert _snapshot(sessions) == before
