"""Trial run of a bulk regrade: a code problem's stored programs are graded in the real sandbox, in a background
thread of the app, against the current version, writing nothing; the trial's page shows what applying would change,
and applying (the workers, the same sandbox) then changes exactly that. Only the staff member who started a trial
sees it, while they may grade in its offering; a selection past the cap is tried in part and says so."""

from __future__ import annotations

import html
import re
import shutil
import threading
import time
from collections import Counter
from typing import Any

from sqlalchemy import func, select

from app.courses import course_sets
from app.courses import service as courses
from app.courses.access import access_for
from app.gradebook import bulk_regrade, trial_regrade
from app.problemsets import service as sets
from app.submissions.models import Grade, Status, Submission
from app.users.models import User
from app.web.trial_jobs import TrialJob
from tests.conftest import FIXTURE_SETS
from tests.courses.conftest import world  # noqa: F401
from tests.web.conftest import csrf_of, login
from tests.web.test_bulk_regrade import _finals, _snapshot

RIGHT = "def add(a, b):\n    return a + b\n"  # 3 of 3 points under codeset's checks
PRODUCT = "def add(a, b):\n    return a * b\n"  # fails both checks: 0
BROKEN = "def add(a, b)\n    return a + b\n"  # a syntax error: 0


Row = tuple[int, dict[str, Any], float, float | None]


def _stored(sessions, slug: str, problem: str, rows: list[Row]) -> list[int]:  # type: ignore[no-untyped-def]
    """Submissions stored as the worker leaves them: (user, payload, auto score, manual score) each, graded."""
    ids = []
    with sessions() as session:
        version = sets.get_latest(session, slug, include_hidden=True)
        assignment = courses.default_assignment(session, version.problem_set)
        attempts: Counter[int] = Counter()
        for user_id, payload, auto, manual in rows:
            attempts[user_id] += 1
            sub = Submission(user_id=user_id, problem_set_version_id=version.id, assignment_id=assignment.id,
                             problem_id=problem, payload=payload, status=Status.GRADED,
                             attempt=attempts[user_id])  # fmt: skip
            session.add(sub)
            session.flush()
            session.add(Grade(submission_id=sub.id, auto_score=auto, max_score=3.0, verdict="partial", message="",
                              manual_score=manual))  # fmt: skip
            ids.append(sub.id)
        session.commit()
    return ids


def _until_done(client, url: str, limit_s: float = 180) -> Any:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + limit_s
    while True:
        live = client.get(url + "/live")
        assert live.status_code == 200, live.text
        if live.headers["X-Progress"] == "done":
            return live
        assert time.monotonic() < deadline, f"{url} did not finish: {live.text}"
        time.sleep(0.1)


def _numbers(text: str) -> tuple[int, int, int, float, Counter[tuple[str, str]]]:
    text = html.unescape(text)
    found = re.search(r"(\d+) would go up, (\d+) down, (\d+) stay the same; total change ([-+\d.e]+) points", text)
    assert found is not None, text
    table = text.split('class="preview-changes"')[1].split("</table>")[0] if "preview-changes" in text else ""
    rows = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td class=\"num\">(\d+)", table)
    return int(found[1]), int(found[2]), int(found[3]), float(found[4]), Counter({(b, a): int(n) for b, a, n in rows})


def test_trial_of_a_code_problem_predicts_what_applying_then_does(client, world, sessions):  # type: ignore[no-untyped-def]  # noqa: F811
    with sessions() as session:  # codeset's checks, without running its gate here: the trial is what runs code
        course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        session.commit()
    alice, bob = world.people["a:alice"].id, world.people["a:bob"].id
    # A grader bug stored alice's right program at 0 (her hand-given 0.5 stays) and bob's product at 1.
    right, product, broken = _stored(sessions, "codeset", "c1", [
        (alice, {"code": RIGHT}, 0.0, 0.5), (bob, {"code": PRODUCT}, 1.0, None), (bob, {"code": BROKEN}, 0.0, None),
    ])  # fmt: skip
    first = _finals(sessions)

    token = login(client, world.people["a:instructor"])
    url = f"/instructor/sets/codeset/regrade?offering={world.a}"
    preview = client.get(url + "&problem=c1").text
    assert "Trial run: grade 3 submissions against the current version" in preview
    assert "would go up" not in preview and "A trial of" not in preview
    before = _snapshot(sessions)
    form = {"problem": "c1", "since": "", "below_full": "", "expected": "3"}
    assert client.post(url.replace("/regrade?", "/regrade/trial?"), data=form).status_code == 403  # no CSRF token
    started = client.post(url.replace("/regrade?", "/regrade/trial?"), data={**form, "csrf_token": token},
                          follow_redirects=False)  # fmt: skip
    assert started.status_code == 303, started.text
    trial_url = started.headers["location"]
    assert re.fullmatch(r"/instructor/regrade-trials/[\w-]+", trial_url)
    page = client.get(trial_url)
    assert page.status_code in (200, 202)  # 202 while it runs; the sandbox may also have finished already
    assert f'data-progress="{trial_url}/live"' in page.text and "graded against version 1 of the set" in page.text

    # Nobody else reaches the trial: not another instructor or TA of the offering, nor staff of another one.
    for key, status in (("a:ta", 404), ("b:instructor", 404), ("b:ta", 404), ("a:observer", 403), ("a:bob", 403)):
        client.cookies.clear()
        other_token = login(client, world.people[key])
        assert client.get(trial_url).status_code == status, key
        assert client.get(trial_url + "/live").status_code == status, key
        if key.startswith("b:"):  # nor start one in an offering they do not teach
            trial_post = url.replace("/regrade?", "/regrade/trial?")
            assert client.post(trial_post, data={**form, "csrf_token": other_token}).status_code == 404, key
    client.cookies.clear()
    token = login(client, world.people["a:instructor"])

    live = _until_done(client, trial_url)
    assert "Trial run: 3 of 3 graded · done" in live.text and "could not be graded" not in live.text
    up, down, same, total, predicted = _numbers(live.text)
    assert (up, down, same) == (1, 1, 1)  # the change is real, not a trial that predicts nothing
    assert _snapshot(sessions) == before  # three programs graded in the sandbox, nothing written

    # The trial's own button applies; the workers grade the same programs in the same sandbox.
    expected = re.search(r'name="expected" value="(\d+)"', live.text)
    assert expected is not None and expected[1] == "3"
    applied = client.post(url, data={**form, "csrf_token": csrf_of(live.text)}, follow_redirects=False)
    assert applied.status_code == 303, applied.text
    done = _until_done(client, applied.headers["location"])
    assert "2 scores changed (1 up, 1 down), 1 unchanged." in done.text
    after = _finals(sessions)
    moved = {sid: after[sid] - first[sid] for sid in first if abs(after[sid] - first[sid]) > 1e-9}
    assert set(moved) == {right, product} and after[right] == 3.5 and after[product] == 0.0 and broken not in moved
    assert sum(1 for d in moved.values() if d > 0) == up and sum(1 for d in moved.values() if d < 0) == down
    assert abs(sum(moved.values()) - total) < 1e-6
    assert predicted == Counter((f"{first[s]:g}", f"{after[s]:g}") for s in moved)


def test_a_selection_past_the_cap_is_tried_in_part_and_says_so(client, world, sessions, settings, tmp_path):  # type: ignore[no-untyped-def]  # noqa: F811
    alice, bob = world.people["a:alice"].id, world.people["a:bob"].id
    limit = trial_regrade.TRIAL_LIMIT
    # bob's one submission is the oldest of all: a trial of the newest alone would leave him out.
    ids = _stored(sessions, "basic", "t1", [(bob, {"answers": {"b1": "Encoder", "b2": "32"}}, 0.0, None)] + [
        (alice, {"answers": {"b1": "Encoder" if i % 2 else "Decoder", "b2": "32"}}, 0.0, None) for i in range(limit)
    ])  # fmt: skip
    with sessions() as session:
        access = access_for(session, session.get(User, world.people["a:instructor"].id))
        selection = bulk_regrade.select_for_regrade(session, access=access, slug="basic", offering_id=world.a,
                                                    problem_id="t1")  # fmt: skip
        plan = trial_regrade.plan_trial(session, settings, selection, limit=3)
        # Each student's latest first (alice's newest, then bob's only one), then their earlier ones.
        assert [item.submission_id for item in plan.items] == [ids[-1], ids[0], ids[-2]] and plan.selected == limit + 1

    token = login(client, world.people["a:instructor"])
    url = f"/instructor/sets/basic/regrade?offering={world.a}"
    form = {"problem": "t1", "since": "", "below_full": "", "expected": str(limit + 1), "csrf_token": token}
    started = client.post(url.replace("/regrade?", "/regrade/trial?"), data=form, follow_redirects=False)
    assert started.status_code == 303, started.text
    page = client.get(started.headers["location"]).text
    assert f"A trial of {limit} of {limit + 1} submissions: each student's latest submission first" in page
    live = _until_done(client, started.headers["location"])
    assert f"Trial run: {limit} of {limit} graded · done" in live.text
    assert f"These numbers are of the {limit} submissions tried; applying regrades all {limit + 1}." in live.text
    assert f'name="expected" value="{limit + 1}"' in live.text and "Regrade 201 submissions" in live.text
    up, _, same, _, _ = _numbers(live.text)
    assert up + same == limit  # stored at 0; each right one would go up

    # A new version meanwhile: the trial still says which one it used, and that applying uses the new one.
    root = tmp_path / "basic"
    shutil.copytree(FIXTURE_SETS / "basic", root)
    spec = (root / "problemset.yaml").read_text(encoding="utf-8")
    (root / "problemset.yaml").write_text(spec.replace('version: "1"', 'version: "2"'), encoding="utf-8")
    with sessions() as session:
        course_sets.load_dir(session, root=root, grader=None)
        session.commit()
    again = client.get(started.headers["location"] + "/live").text
    assert "current version is now 2: applying grades against it, not against version 1 that this trial" in again


def test_one_trial_at_a_time_and_a_failed_trial_says_so(client, world, sessions):  # type: ignore[no-untyped-def]  # noqa: F811
    right = {"answers": {"b1": "Encoder", "b2": "32"}}
    _stored(sessions, "basic", "t1", [(world.people["a:alice"].id, right, 0.0, None)])
    instructor = world.people["a:instructor"]
    token = login(client, instructor)
    trials = client.app.state.trial_jobs
    release = threading.Event()
    fields = {"problem": "t1", "since": "", "below_full": ""}

    def job() -> TrialJob:
        with sessions() as session:
            version = sets.get_latest(session, "basic", include_hidden=True)
            assignment = courses.default_assignment(session, version.problem_set)
            return TrialJob(owner_id=instructor.id, assignment_id=assignment.id, offering_id=world.a, slug="basic",
                            fields=fields, version_number=1, selected=1, total=1)  # fmt: skip

    def held(_job: TrialJob) -> tuple[int, dict[str, Any]]:  # a trial still grading, until the test lets it end
        release.wait(60)
        return 200, {}

    running = job()
    assert trials.start(running, held, alone=True)
    try:
        assert not trials.start(job(), held, alone=True)  # two requests at once: the second starts nothing
        url = f"/instructor/sets/basic/regrade/trial?offering={world.a}"
        refused = client.post(url, data={**fields, "expected": "1", "csrf_token": token}, follow_redirects=False)
        assert refused.status_code == 409 and "still grading" in refused.text
        assert len(trials.running(owner_id=instructor.id)) == 1  # no second one started
        assert client.get(f"/instructor/regrade-trials/{running.id}/live").headers["X-Progress"] == "running"
    finally:
        release.set()

    def broken(_job: TrialJob) -> tuple[int, dict[str, Any]]:
        raise RuntimeError("a bug of ours")

    _until_done(client, f"/instructor/regrade-trials/{running.id}", limit_s=30)
    failed = job()
    assert trials.start(failed, broken, alone=True)  # the first one has ended
    live = _until_done(client, f"/instructor/regrade-trials/{failed.id}", limit_s=30)
    assert "This trial run failed on our side; try again." in live.text and "Regrade 1" not in live.text
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Submission)) == 1
