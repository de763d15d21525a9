"""Attempt limits, cooldowns, malformed answers, decay, best/last, overrides and release policies, through the API
(SQLite and PostgreSQL), with the ch9 q1 case of the issue on the real set."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.courses import course_sets
from app.courses import service as courses
from app.db import utcnow
from tests.app.conftest import Account
from tests.conftest import REPO
from tests.courses.conftest import World

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # These tests post up to 50 answers in a burst to count attempts; the per-token rate limit (tests/ops) is not
    # what they are about.
    return settings.model_copy(update={"rate_limits": False})


Q1_FOUR_OF_FIVE = {"b1": "sqrt(d_k)", "b2": "V", "b3": "查找的信息", "b4": "匹配", "b5": "火星"}


def post(
    client: TestClient,
    who: Account,
    problem: str,
    answers: dict[str, str],
    *,
    problem_set: str = "basic",
    wait: float = 10,
) -> Any:
    return client.post(
        "/api/v1/submissions",
        params={"wait": wait},
        headers=who.headers,
        json={"problem_set": problem_set, "problem": problem, "answers": answers},
    )


def configure(client: TestClient, world: World, **policy: Any) -> None:
    resp = client.patch(
        f"/api/v1/assignments/{world.assignment_a}", json=policy, headers=world.people["a:instructor"].headers
    )
    assert resp.status_code == 200, resp.text


@pytest.fixture
def ch9(sessions, world: World, client: TestClient) -> int:  # type: ignore[no-untyped-def]
    with sessions() as session:
        version, _, _ = course_sets.load_dir(session, root=REPO / "problems" / "ch9", grader=None)
        assignment = courses.default_assignment(session, version.problem_set)
        session.commit()
        return assignment.id


def test_ch9_q1_four_of_five_hides_the_key_and_the_fourth_attempt_is_refused(client, world, ch9):  # type: ignore[no-untyped-def]
    due = (utcnow() + timedelta(days=3)).isoformat()
    resp = client.patch(
        f"/api/v1/assignments/{ch9}",
        headers=world.people["a:instructor"].headers,
        json={"max_attempts": 3, "release_answer_key": "after_due", "due_at": due},
    )
    assert resp.status_code == 200, resp.text
    alice = world.people["a:alice"]

    # A malformed answer is refused before it is stored, with the reason, and uses no attempt.
    bad = post(client, alice, "q1", {**Q1_FOUR_OF_FIVE, "b1": "sqrt(d_k"}, problem_set="ch9")
    assert bad.status_code == 422
    msg = bad.json()["detail"][0]["msg"]
    assert msg.startswith("invalid format: not counted") and "b1" in msg and "sqrt(d_k" in msg
    assert client.get("/api/v1/submissions", headers=alice.headers).json() == []

    first = post(client, alice, "q1", Q1_FOUR_OF_FIVE, problem_set="ch9").json()
    assert first["status"] == "graded" and first["attempt"] == 1
    assert first["score"] == 4.0 and first["max_score"] == 5.0
    assert first["answer_key"] is None and first["explanation"] is None  # the key opens after the due date
    for attempt in (2, 3):
        again = post(client, alice, "q1", Q1_FOUR_OF_FIVE, problem_set="ch9").json()
        assert again["attempt"] == attempt and again["answer_key"] is None
    fourth = post(client, alice, "q1", Q1_FOUR_OF_FIVE, problem_set="ch9")
    assert fourth.status_code == 429
    assert fourth.json()["detail"][0]["msg"] == "no attempts left at q1: all 3 are used"
    # The staff view is never sealed.
    staff = client.get(f"/api/v1/submissions/{first['id']}", headers=world.people["a:instructor"].headers).json()
    assert staff["answer_key"]["b1"] == "sqrt(d_k)" and staff["explanation"] is not None


def test_cooldown_says_when_the_next_attempt_is_possible(client, world):  # type: ignore[no-untyped-def]
    configure(client, world, cooldown_s=3600)
    alice = world.people["a:alice"]
    assert post(client, alice, "t2", {"b1": "A"}).status_code == 202
    resp = post(client, alice, "t2", {"b1": "B"})
    assert resp.status_code == 429
    body = resp.json()
    assert 3500 <= body["retry_after"] <= 3600 and body["next_attempt_at"]
    assert "wait before the next attempt at t2" in body["detail"][0]["msg"]
    # Another problem has its own attempts; a per-problem setting lifts the cooldown for t1.
    configure(client, world, problem_policies={"t1": {"cooldown_s": 0}})
    assert post(client, alice, "t1", {"b1": "encoder", "b2": "31"}).status_code == 202
    assert post(client, alice, "t1", {"b1": "encoder", "b2": "31"}).status_code == 202


def _cell(client: TestClient, world: World, email: str, problem: str) -> float | None:
    book = client.get(f"/api/v1/gradebook/basic?offering={world.a}", headers=world.people["a:instructor"].headers)
    row = next(r for r in book.json()["students"] if r["email"] == email)
    return row["cells"][problem]["best_score"]  # type: ignore[no-any-return]


def test_decay_and_which_attempt_counts(client, world):  # type: ignore[no-untyped-def]
    configure(client, world, decay_per_attempt=0.25)
    alice = world.people["a:alice"]
    full = {"b1": "encoder", "b2": "32"}
    one = post(client, alice, "t1", full).json()
    two = post(client, alice, "t1", full).json()
    three = post(client, alice, "t1", {"b1": "decoder", "b2": "32"}).json()
    assert (one["final_score"], one["attempt_decay"]) == (3.0, 0.0)
    assert (two["final_score"], two["attempt_decay"]) == (2.25, 0.25)
    assert (three["final_score"], three["attempt_decay"]) == (1.0, 0.5)  # 2 points x (1 - 0.5)
    assert _cell(client, world, "alice@example.com", "t1") == 3.0  # best
    configure(client, world, counts="last")
    assert _cell(client, world, "alice@example.com", "t1") == 1.0  # last


def test_overrides_change_due_date_late_penalty_and_attempts_for_one_student(client, world):  # type: ignore[no-untyped-def]
    now = utcnow()
    configure(
        client,
        world,
        due_at=(now - timedelta(days=2, hours=1)).isoformat(),
        max_late_days=5,
        late_penalty_per_day=0.1,
        max_attempts=1,
    )
    instructor = world.people["a:instructor"].headers
    resp = client.post(
        f"/api/v1/assignments/{world.assignment_a}/overrides",
        headers=instructor,
        json={"email": "alice@example.com", "due_at": (now + timedelta(days=2)).isoformat(), "extra_attempts": 1},
    )
    assert resp.status_code == 201, resp.text
    alice, bob = world.people["a:alice"], world.people["a:bob"]
    full = {"b1": "encoder", "b2": "32"}
    a1 = post(client, alice, "t1", full).json()
    assert a1["late_penalty"] == 0.0 and a1["final_score"] == 3.0
    assert post(client, alice, "t1", full).status_code == 202  # her extra attempt
    assert post(client, alice, "t1", full).status_code == 429
    b1 = post(client, bob, "t1", full).json()
    assert b1["late_penalty"] == pytest.approx(0.3) and b1["final_score"] == pytest.approx(2.1)
    assert post(client, bob, "t1", full).status_code == 429
    # Her due date is hers alone: the set as she sees it, and as bob sees it.
    mine = client.get(f"/api/v1/problem-sets/basic?offering={world.a}", headers=alice.headers).json()["due_at"]
    his = client.get(f"/api/v1/problem-sets/basic?offering={world.a}", headers=bob.headers).json()["due_at"]
    assert mine > his


def test_scores_released_after_the_due_date_are_sealed_in_every_reader(client, world):  # type: ignore[no-untyped-def]
    configure(
        client,
        world,
        release_scores="after_due",
        release_feedback="after_due",
        due_at=(utcnow() + timedelta(days=1)).isoformat(),
    )
    alice = world.people["a:alice"]
    sub = post(client, alice, "t1", {"b1": "encoder", "b2": "31"}).json()
    assert sub["status"] == "graded"
    assert sub["score"] is None and sub["final_score"] is None and sub["verdict"] is None
    assert all(c["score"] is None and c["passed"] is None for c in sub["checks"])
    assert all("released later" in c["feedback"] for c in sub["checks"])
    listed = client.get("/api/v1/submissions", headers=alice.headers).json()
    assert listed[0]["final_score"] is None and listed[0]["verdict"] is None
    # Staff see the score, in the API and in the CSV.
    staff = client.get(f"/api/v1/submissions/{sub['id']}", headers=world.people["a:instructor"].headers).json()
    assert staff["score"] == 1.0
    csv = client.get(f"/api/v1/gradebook/basic.csv?offering={world.a}", headers=world.people["a:instructor"].headers)
    assert "alice@example.com" in csv.text
    # A student cannot read the CSV at all.
    assert client.get(f"/api/v1/gradebook/basic.csv?offering={world.a}", headers=alice.headers).status_code == 403


def test_concurrent_posts_never_share_an_attempt_number(client, world):  # type: ignore[no-untyped-def]
    alice = world.people["a:alice"]

    def one(_: int) -> Any:
        return post(client, alice, "t2", {"b1": "B"}, wait=0)

    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(one, range(50)))
    assert [r.status_code for r in results] == [202] * 50, [r.text for r in results if r.status_code != 202][:3]
    assert sorted(r.json()["attempt"] for r in results) == list(range(1, 51))


def test_concurrent_posts_let_exactly_the_limit_through(client, world):  # type: ignore[no-untyped-def]
    configure(client, world, max_attempts=5)
    alice = world.people["a:alice"]
    with ThreadPoolExecutor(max_workers=16) as pool:
        results = list(pool.map(lambda _: post(client, alice, "t2", {"b1": "B"}, wait=0), range(50)))
    codes = sorted(r.status_code for r in results)
    assert codes == [202] * 5 + [429] * 45
    assert sorted(r.json()["attempt"] for r in results if r.status_code == 202) == [1, 2, 3, 4, 5]
