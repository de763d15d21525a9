"""Every student their own numbers (issue 27): seed 001's Q4 (problems/attention) through the real app, its
generator run in the set's jailed checker. Two students of one offering see different B, H, T, d on the API and
the set page, each is graded against their own key (full marks for theirs, zero for the other's parts), sees their
own key once released, and keeps their variant through a regrade."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from sqlalchemy import delete, select

from app.courses import course_sets
from app.courses.access import access_for
from app.gradebook import bulk_regrade
from app.problemsets.models import ProblemVariant
from app.problemsets.variants import close_variant_checkers, seed_for, variant_checkers
from app.submissions.models import Submission
from app.users.models import User
from tests.conftest import REPO
from tests.web.conftest import login

NUMBERS = re.compile(r"\$d=(\d+)\$，头数 \$H=(\d+)\$，批量 \$B=(\d+)\$，序列长度 \$T=(\d+)\$")


@dataclass(frozen=True)
class Numbers:
    d: int
    H: int
    B: int
    T: int

    def answers(self) -> dict[str, str]:
        d, h, b, t = self.d, self.H, self.B, self.T
        return {
            "b1": str(d // h),
            "b2": f"{b}×{h}×{t}×{d // h}",
            "b3": f"{b}×{h}×{t}×{t}",
            "b4": f"{b}×{t}×{d}",
            "b5": str(b * h * t * t),
            "b6": f"{4 * b * h * t * t} B",
            "b7": "B*T^2*d",
            "b8": "B*H*T^2",
        }


def numbers_in(text: str) -> Numbers:
    match = NUMBERS.search(text)
    assert match, "the prompt shows no numbers"
    return Numbers(*(int(g) for g in match.groups()))


@pytest.fixture
def attention_set(sessions, settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    with sessions() as session:
        _, report, _ = course_sets.load_dir(
            session, root=REPO / "problems" / "attention", grader=None, variants=variant_checkers(settings)
        )
        session.commit()
    assert report.ok and any("q4: 20 variants drawn" in note for note in report.notes), report.render_text()
    yield "attention"
    close_variant_checkers()


def submit(client, account, answers):  # type: ignore[no-untyped-def]
    body = {"problem_set": "attention", "problem": "q4", "answers": answers}
    resp = client.post("/api/v1/submissions", json=body, headers=account.headers, params={"wait": 30})
    assert resp.status_code == 202, resp.text
    return resp.json()


def scores(body) -> dict[str, float]:  # type: ignore[no-untyped-def]
    return {c["name"]: c["score"] for c in body["checks"]}


def test_two_students_see_their_own_numbers_and_are_graded_on_their_own_key(  # type: ignore[no-untyped-def]
    client, accounts, attention_set, sessions
) -> None:
    alice, bob = accounts["alice"], accounts["bob"]
    seen = {}
    for who in (alice, bob):
        view = client.get("/api/v1/problem-sets/attention/problems/q4", headers=who.headers).json()
        seen[who.id] = numbers_in(view["prompt"])
        whole = client.get("/api/v1/problem-sets/attention", headers=who.headers).json()
        q4 = next(p for p in whole["problems"] if p["id"] == "q4")
        assert numbers_in(q4["prompt"]) == seen[who.id]  # the same variant in the set and the problem view
        assert "{%" not in q4["prompt"]
    assert seen[alice.id] != seen[bob.id]
    mine, theirs = seen[alice.id].answers(), seen[bob.id].answers()
    differs = [part for part in mine if mine[part] != theirs[part]]
    assert "b5" in differs and "b6" in differs

    # Bob's right answers are Alice's wrong ones, part by part; then her own score full marks and open her key.
    wrong = submit(client, alice, theirs)
    assert all(scores(wrong)[part] == 0 for part in differs)
    assert wrong["answer_key"] is None  # not released while she has attempts left and no full marks
    right = submit(client, alice, mine)
    assert right["score"] == right["max_score"] == 8.0 and right["verdict"] == "accepted"
    key = right["answer_key"]
    n = seen[alice.id]
    assert key["b2"] == str([n.B, n.H, n.T, n.d // n.H])
    assert key["b5"] == str(n.B * n.H * n.T * n.T)  # an exact count in full, not 1.04858e+06
    explanation = right["explanation"]["markdown"]
    assert f"={n.B * n.H * n.T * n.T}$" in explanation and "{%" not in explanation

    bobs = submit(client, bob, theirs)
    assert bobs["score"] == 8.0 and bobs["answer_key"]["b2"] != key["b2"]

    # The seed is stored with each submission; a regrade keeps it, even with the cached variant gone.
    with sessions() as session:
        stored = session.scalar(select(Submission).where(Submission.id == right["id"]))
        assert stored is not None and stored.variant_seed == seed_for(
            client.app.state.settings, assignment_id=stored.assignment_id, user_id=alice.id, problem_id="q4"
        )
        session.execute(delete(ProblemVariant))
        session.commit()
    # With its variant not stored, the submission shows no key at all, never the set's own (seed 0) numbers.
    lost = client.get(f"/api/v1/submissions/{right['id']}", headers=alice.headers).json()
    assert lost["score"] == 8.0 and lost["answer_key"] is None and lost["explanation"] is None
    instructor = accounts["instructor"]
    # The bulk regrade's preview grades each stored answer on its own variant: nothing changes.
    with sessions() as session:
        staff = access_for(session, session.get(User, instructor.id))
        selection = bulk_regrade.select_for_regrade(
            session, access=staff, slug="attention", offering_id=None, problem_id="q4"
        )
        prediction = bulk_regrade.predict(session, client.app.state.settings, selection)
    assert prediction.known and prediction.after[right["id"]] == 8.0 and prediction.after[bobs["id"]] == 8.0
    assert prediction.after[wrong["id"]] == prediction.before[wrong["id"]] and not prediction.changed()
    resp = client.post(f"/api/v1/submissions/{right['id']}/regrade", headers=instructor.headers)
    assert resp.status_code == 202, resp.text
    deadline = time.monotonic() + 60  # bounds a hung regrade; measures nothing
    again = client.get(f"/api/v1/submissions/{right['id']}", headers=alice.headers, params={"wait": 30}).json()
    while again["status"] != "graded" and time.monotonic() < deadline:
        time.sleep(0.1)
        again = client.get(f"/api/v1/submissions/{right['id']}", headers=alice.headers).json()
    assert again["status"] == "graded" and again["score"] == 8.0
    assert again["answer_key"]["b2"] == key["b2"]


def test_the_set_page_shows_each_student_their_own_numbers_and_key(client, accounts, attention_set) -> None:  # type: ignore[no-untyped-def]
    pages = {}
    for name in ("alice", "bob"):
        client.cookies.clear()
        token = login(client, accounts[name])
        html = client.get("/sets/attention").text
        pages[name] = numbers_in(html)
        api = client.get("/api/v1/problem-sets/attention/problems/q4", headers=accounts[name].headers).json()
        assert numbers_in(api["prompt"]) == pages[name]  # the page and the API agree
        data = {f"answer.{part}": text for part, text in pages[name].answers().items()}
        resp = client.post("/sets/attention/problems/q4", data={**data, "csrf_token": token}, follow_redirects=False)
        assert resp.status_code == 303, resp.text
        sub_id = int(resp.headers["location"].rsplit("/", 1)[1])
        deadline = time.monotonic() + 30  # bounds a hung grading; measures nothing
        html = client.get(f"/submissions/{sub_id}").text
        while 'data-live="/submissions/' in html and time.monotonic() < deadline:
            time.sleep(0.05)
            html = client.get(f"/submissions/{sub_id}").text
        n = pages[name]
        assert re.search(r'class="score">8</span>', html), html[:2000]
        assert str([n.B, n.H, n.T, n.T]) in html  # the released key of b3 is this student's
    assert pages["alice"] != pages["bob"]


@pytest.fixture
def served(settings) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The app on a real port (one the kernel picks, bound here and handed to uvicorn), for the command-line
    client."""
    import socket
    import threading

    import uvicorn

    from app.main import create_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started and thread.is_alive():
        time.sleep(0.05)
    assert server.started
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join()
        sock.close()


def test_the_command_line_client_is_graded_on_the_students_own_variant(accounts, attention_set, served) -> None:  # type: ignore[no-untyped-def]
    import json

    import httpx
    from typer.testing import CliRunner

    from app.cli.main import app as cli

    seen = {}
    for name in ("alice", "bob"):
        view = httpx.get(
            f"{served}/api/v1/problem-sets/attention/problems/q4", headers=accounts[name].headers, timeout=60
        )  # the first view runs the generator in a checker that may still be starting: httpx waits 5 s by default
        seen[name] = numbers_in(view.json()["prompt"])
    assert seen["alice"] != seen["bob"]

    def submit_cli(name: str, answers: dict[str, str]):  # type: ignore[no-untyped-def]
        args = ["submit", "--set", "attention", "--problem", "q4", "--answers", json.dumps(answers), "--json"]
        args += ["--url", served, "--token", accounts[name].token, "--wait", "30"]
        return CliRunner().invoke(cli, args)

    others = submit_cli("alice", seen["bob"].answers())
    assert others.exit_code == 1, others.output  # not full marks: Bob's numbers are not hers
    own = submit_cli("alice", seen["alice"].answers())
    assert own.exit_code == 0, own.output
    body = json.loads(own.output)
    n = seen["alice"]
    assert body["score"] == 8.0 and body["answer_key"]["b5"] == str(n.B * n.H * n.T * n.T)


def test_new_variant_after_n_attempts(client, accounts, attention_set, sessions) -> None:  # type: ignore[no-untyped-def]
    from app.courses.models import Assignment

    with sessions() as session:
        assignment_id = session.scalars(select(Assignment.id)).one()
    # A new variant after every attempt (the assignment's setting, as an instructor sets it).
    resp = client.patch(
        f"/api/v1/assignments/{assignment_id}", json={"new_variant_after": 1}, headers=accounts["instructor"].headers
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["new_variant_after"] == 1
    refused = client.patch(
        f"/api/v1/assignments/{assignment_id}", json={"new_variant_after": 0}, headers=accounts["instructor"].headers
    )
    assert refused.status_code == 422
    alice = accounts["alice"]

    def numbers() -> Numbers:
        view = client.get("/api/v1/problem-sets/attention/problems/q4", headers=alice.headers).json()
        return numbers_in(view["prompt"])

    first = numbers()
    assert numbers() == first  # the same until she submits
    graded = submit(client, alice, first.answers())
    assert graded["score"] == 8.0  # graded on the variant she was shown
    second = numbers()
    assert second != first
    again = submit(client, alice, second.answers())
    assert again["score"] == 8.0
    with sessions() as session:
        seeds = session.scalars(select(Submission.variant_seed).order_by(Submission.id)).all()
    assert len(set(seeds)) == 2


def test_a_new_version_keeps_the_seed_and_its_changed_generator_re_derives_the_key(  # type: ignore[no-untyped-def]
    client, accounts, attention_set, sessions, settings, tmp_path
) -> None:
    import shutil

    alice = accounts["alice"]
    view = client.get("/api/v1/problem-sets/attention/problems/q4", headers=alice.headers).json()
    old = numbers_in(view["prompt"])
    graded = submit(client, alice, old.answers())
    assert graded["score"] == 8.0

    # Version 2: the generator draws from the same sizes in another order (seed 0 is still the set's numbers), so
    # Alice's seed now means other numbers.
    copy = tmp_path / "attention"
    shutil.copytree(REPO / "problems" / "attention", copy)
    generator = copy / "generators" / "q4.py"
    source = generator.read_text().replace(
        '{"B": [4, 8, 16], "H": [4, 8, 16], "T": [64, 128, 256], "d": [128, 256, 512]}',
        '{"B": [8, 16, 4], "H": [8, 16, 4], "T": [128, 256, 64], "d": [256, 512, 128]}',
    )
    assert source != generator.read_text()
    generator.write_text(source)
    with sessions() as session:
        version, report, created = course_sets.load_dir(
            session, root=copy, grader=None, variants=variant_checkers(settings)
        )
        session.commit()
        assert created and report.ok and version.number == 2

    new = numbers_in(client.get("/api/v1/problem-sets/attention/problems/q4", headers=alice.headers).json()["prompt"])
    assert new != old
    instructor = accounts["instructor"]
    with sessions() as session:
        staff = access_for(session, session.get(User, instructor.id))
        selection = bulk_regrade.select_for_regrade(
            session, access=staff, slug="attention", offering_id=None, problem_id="q4"
        )
        prediction = bulk_regrade.predict(session, settings, selection)
        assert prediction.known and prediction.after[graded["id"]] < 8.0  # the preview shows the new key's effect
        bulk_regrade.start(session, selection=selection, user=session.get(User, instructor.id))
        queued = [sub.id for sub in selection.submissions]
    for sub_id in queued:  # as the bulk regrade page wakes the workers
        client.app.state.dispatch(sub_id)
    deadline = time.monotonic() + 60  # bounds a hung regrade; measures nothing
    again = client.get(f"/api/v1/submissions/{graded['id']}", headers=alice.headers, params={"wait": 30}).json()
    while again["status"] != "graded" and time.monotonic() < deadline:
        time.sleep(0.1)
        again = client.get(f"/api/v1/submissions/{graded['id']}", headers=alice.headers).json()
    assert again["status"] == "graded" and again["version"] == 2
    assert again["score"] == prediction.after[graded["id"]]
    with sessions() as session:
        stored = session.get(Submission, graded["id"])
        assert stored is not None and stored.variant_seed == seed_for(
            settings, assignment_id=stored.assignment_id, user_id=alice.id, problem_id="q4"
        )
    right = submit(client, alice, new.answers())
    assert right["score"] == 8.0 and right["answer_key"]["b2"] == str([new.B, new.H, new.T, new.d // new.H])


def test_a_generator_that_fails_for_a_students_seed_refuses_clearly_and_stores_nothing(  # type: ignore[no-untyped-def]
    client, accounts, attention_set, sessions, settings, tmp_path
) -> None:
    """A generator that passes the gate's draws but raises for a student's seed: a 503 naming the problem and the
    instructor, not a 500; its own message (instructor code: it may name the key) never reaches the student."""
    import shutil

    from graders.problemset.variant_gate import gate_seeds

    copy = tmp_path / "attention"
    shutil.copytree(REPO / "problems" / "attention", copy)
    generator = copy / "generators" / "q4.py"
    gated = sorted(gate_seeds("q4", settings.variant_draws))
    generator.write_text(
        generator.read_text().replace("def generate(", "def _generate(", 1)
        + f"\n\ndef generate(seed):\n    if seed not in {gated!r}:\n"
        + '        raise ValueError("the key of b5 is 524288")\n    return _generate(seed)\n'
    )
    with sessions() as session:
        _, report, created = course_sets.load_dir(session, root=copy, grader=None, variants=variant_checkers(settings))
        session.commit()
    assert created and report.ok, report.render_text()  # the gate's own seeds all work

    alice = accounts["alice"]
    with sessions() as session:
        before = len(session.scalars(select(Submission)).all())
    view = client.get("/api/v1/problem-sets/attention/problems/q4", headers=alice.headers)
    sent = client.post("/api/v1/submissions", headers=alice.headers,
                       json={"problem_set": "attention", "problem": "q4", "answers": {"b1": "32"}})  # fmt: skip
    for resp in (view, sent):
        assert resp.status_code == 503, resp.text
        assert "q4" in resp.text and "instructor" in resp.text
        assert "524288" not in resp.text and "ValueError" not in resp.text
    with sessions() as session:
        assert len(session.scalars(select(Submission)).all()) == before


TODAY = Numbers(d=256, H=8, B=8, T=128)  # the set's own numbers (seed 0), as problemset.yaml writes them


def test_an_assignment_may_share_one_variant_among_all_students(client, accounts, attention_set, sessions) -> None:  # type: ignore[no-untyped-def]
    """``variants: shared``: every student sees and is graded on the set's own numbers (seed 0), on the API and
    the set page; a set with parameters is assigned per student, one without shared; shared refuses
    new_variant_after."""
    from app.courses.models import Assignment

    with sessions() as session:
        assignment_id = session.scalars(select(Assignment.id)).one()
    url, instructor = f"/api/v1/assignments/{assignment_id}", accounts["instructor"].headers
    assert client.get(url, headers=instructor).json()["variants"] == "per_student"  # the set has parameters
    resp = client.patch(url, json={"variants": "shared"}, headers=instructor)
    assert resp.status_code == 200 and resp.json()["variants"] == "shared", resp.text
    assert client.patch(url, json={"variants": "each"}, headers=instructor).status_code == 422
    assert client.patch(url, json={"variants": None}, headers=instructor).status_code == 422
    refused = client.patch(url, json={"new_variant_after": 2}, headers=instructor)
    assert refused.status_code == 422 and "new_variant_after" in refused.text

    for name in ("alice", "bob"):
        view = client.get("/api/v1/problem-sets/attention/problems/q4", headers=accounts[name].headers).json()
        assert numbers_in(view["prompt"]) == TODAY
        graded = submit(client, accounts[name], TODAY.answers())
        assert graded["score"] == 8.0
    client.cookies.clear()
    login(client, accounts["bob"])
    assert numbers_in(client.get("/sets/attention").text) == TODAY
    with sessions() as session:
        assert set(session.scalars(select(Submission.variant_seed))) == {0}

    # Back to per student: the next view is the student's own seed again (their shared-variant submissions keep 0).
    assert client.patch(url, json={"variants": "per_student"}, headers=instructor).status_code == 200
    views = {
        name: numbers_in(
            client.get("/api/v1/problem-sets/attention/problems/q4", headers=accounts[name].headers).json()["prompt"]
        )
        for name in ("alice", "bob")
    }
    assert views["alice"] != views["bob"]


def test_a_set_without_parameters_is_assigned_with_one_shared_variant(sessions) -> None:  # type: ignore[no-untyped-def]
    from app.courses import service as courses
    from app.courses.models import Offering, Variants

    with sessions() as session:
        course_sets.load_dir(session, root=REPO / "problems" / "ch9", grader=None)
        offering = session.scalars(select(Offering)).first()
        assert offering is not None
        ch9 = courses.ensure_assigned(
            session, offering=offering, problem_set=courses.problem_set_by_slug(session, "ch9")
        )
        assert ch9.variants == Variants.SHARED and ch9.shared_variant


def test_the_settings_page_sets_the_variants_choice(client, accounts, attention_set, sessions) -> None:  # type: ignore[no-untyped-def]
    from app.courses.models import Assignment

    with sessions() as session:
        assignment_id = session.scalars(select(Assignment.id)).one()
    token = login(client, accounts["instructor"])
    page = client.get(f"/assignments/{assignment_id}/settings").text
    assert '<option value="per_student" selected>' in page and 'name="variants"' in page
    form = {
        "csrf_token": token, "cooldown_s": "0", "decay_per_attempt": "0", "counts": "best",
        "release_scores": "immediately", "release_feedback": "immediately", "release_explanation": "immediately",
        "release_answer_key": "after_attempts", "variants": "shared",
    }  # fmt: skip
    saved = client.post(f"/assignments/{assignment_id}/settings", data=form)
    assert saved.status_code == 200, saved.text
    assert '<option value="shared" selected>' in saved.text
    with sessions() as session:
        assert session.get(Assignment, assignment_id).variants == "shared"  # type: ignore[union-attr]
    # A form without the field (one from before the choice) keeps it; new numbers per attempt are refused with it.
    del form["variants"]
    assert client.post(f"/assignments/{assignment_id}/settings", data=form).status_code == 200
    refused = client.post(f"/assignments/{assignment_id}/settings", data=form | {"new_variant_after": "2"})
    assert refused.status_code == 422
    with sessions() as session:
        row = session.get(Assignment, assignment_id)
        assert row is not None and row.variants == "shared" and row.new_variant_after is None


def test_statistics_and_the_gradebook_break_down_by_variant(client, accounts, attention_set, sessions) -> None:  # type: ignore[no-untyped-def]
    """Alice answers her own numbers right, Bob answers Alice's (wrong for him): the statistics give each variant
    its own row (Bob's, the lower mean, first) and the parameters' values; the gradebook CSVs name each student's
    variant after the total; the instructor's page shows the breakdown."""
    from app.courses.models import Assignment

    alice, bob, instructor = accounts["alice"], accounts["bob"], accounts["instructor"]
    mine = numbers_in(client.get("/api/v1/problem-sets/attention/problems/q4", headers=alice.headers).json()["prompt"])
    theirs = numbers_in(client.get("/api/v1/problem-sets/attention/problems/q4", headers=bob.headers).json()["prompt"])
    assert submit(client, alice, mine.answers())["score"] == 8.0
    assert submit(client, bob, mine.answers())["score"] < 8.0
    with sessions() as session:
        assignment = session.scalars(select(Assignment)).one()
        seeds = {
            who.id: seed_for(client.app.state.settings, assignment_id=assignment.id, user_id=who.id, problem_id="q4")
            for who in (alice, bob)
        }
        offering_id = assignment.offering_id

    stats = client.get("/api/v1/gradebook/attention/stats", headers=instructor.headers).json()
    q4 = next(p for p in stats["problems"] if p["id"] == "q4")
    assert [v["seed"] for v in q4["variants"]] == [seeds[bob.id], seeds[alice.id]]  # the lowest mean first
    assert q4["variants"][1]["mean_best"] == 8.0 and q4["variants"][1]["full_marks_fraction"] == 1.0
    assert q4["variants"][1]["params"]["T"] == mine.T and q4["variants"][0]["params"]["T"] == theirs.T
    differing = [name for name in ("B", "H", "T", "d") if getattr(mine, name) != getattr(theirs, name)]
    rows = {(r["name"], r["value"]): r for r in q4["by_parameter"]}
    for name in differing:
        assert rows[(name, str(getattr(mine, name)))]["mean_best"] == 8.0
        assert rows[(name, str(getattr(theirs, name)))]["mean_best"] < 8.0
    q1 = next(p for p in stats["problems"] if p["id"] == "q1")
    assert q1["variants"] == [] and q1["by_parameter"] == []  # no parameters, no breakdown

    book = client.get("/api/v1/gradebook/attention.csv", headers=instructor.headers).text.splitlines()
    header = book[0].split(",")
    assert header[-2:] == ["total", "q4 variant"] and "q1 variant" not in header
    by_email = {line.split(",")[0]: line.split(",") for line in book[1:]}
    assert by_email[alice.email][-1] == str(seeds[alice.id]) and by_email[bob.email][-1] == str(seeds[bob.id])
    whole = client.get(f"/api/v1/offerings/{offering_id}/gradebook.csv", headers=instructor.headers).text.splitlines()
    assert whole[0].split(",")[-1] == "attention/q4 variant"
    assert any(line.startswith(alice.email) and line.endswith(str(seeds[alice.id])) for line in whole[1:])

    login(client, instructor)
    page = client.get(f"/instructor/sets/attention/gradebook?offering={offering_id}").text
    assert "By variant" in page and f'<th scope="row">{seeds[alice.id]}</th>' in page
