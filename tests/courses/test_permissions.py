"""The permission matrix through the API: every role of offering B is refused (403/404) everything of offering A,
including CSV and statistics; within an offering each role gets exactly what the matrix gives it.

SQLite only: the matrix is the access checks' (app/courses/access.py), the same queries on either backend; what
the backends do differently (constraints, locking, case) has its own PostgreSQL twins. One app per module
(``shared_app``): the database is emptied before each test, the set-up's world made again."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.courses import service as courses
from app.courses.models import MemberRole, Offering
from tests.courses.conftest import World

pytestmark = [pytest.mark.shared_app, pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)]

B_ROLES = ["b:instructor", "b:ta", "b:observer", "b:student"]


def _endpoints(w: World, alice_sub: int) -> list[tuple[str, str, dict[str, Any]]]:
    a, asg = w.a, w.assignment_a
    roster = {"files": {"file": ("r.csv", b"email\nnew@example.com\n", "text/csv")}}
    return [
        ("GET", f"/api/v1/offerings/{a}", {}),
        ("PATCH", f"/api/v1/offerings/{a}", {"json": {"title": "taken over"}}),
        ("POST", f"/api/v1/offerings/{a}/join-code", {}),
        ("GET", f"/api/v1/offerings/{a}/members", {}),
        ("POST", f"/api/v1/offerings/{a}/members", {"json": {"email": "intruder@example.com"}}),
        ("POST", f"/api/v1/offerings/{a}/roster", roster),
        ("POST", f"/api/v1/offerings/{a}/roster?apply=true&drop_missing=true", roster),
        ("GET", f"/api/v1/offerings/{a}/roster.csv", {}),
        ("GET", f"/api/v1/offerings/{a}/assignments", {}),
        ("POST", f"/api/v1/offerings/{a}/assignments", {"json": {"problem_set": "basic"}}),
        ("GET", f"/api/v1/offerings/{a}/gradebook", {}),
        ("GET", f"/api/v1/offerings/{a}/gradebook.csv", {}),
        ("GET", f"/api/v1/assignments/{asg}", {}),
        ("PATCH", f"/api/v1/assignments/{asg}", {"json": {"max_attempts": 1}}),
        ("GET", f"/api/v1/assignments/{asg}/overrides", {}),
        ("POST", f"/api/v1/assignments/{asg}/overrides", {"json": {"email": "alice@example.com", "extra_attempts": 9}}),
        ("GET", f"/api/v1/gradebook/basic?offering={a}", {}),
        ("GET", f"/api/v1/gradebook/basic.csv?offering={a}", {}),
        ("GET", f"/api/v1/gradebook/basic?offering={a}&format=csv", {}),
        ("GET", f"/api/v1/gradebook/basic/stats?offering={a}", {}),
        ("GET", f"/api/v1/problem-sets/basic?offering={a}", {}),
        ("GET", f"/api/v1/problem-sets/basic/problems/t1?offering={a}", {}),
        ("GET", f"/api/v1/problem-sets/basic/versions?offering={a}", {}),
        ("GET", f"/api/v1/submissions/{alice_sub}", {}),
        ("POST", f"/api/v1/submissions/{alice_sub}/regrade", {}),
        ("POST", f"/api/v1/submissions/{alice_sub}/manual-grade", {"json": {"manual_score": 0, "feedback": "x"}}),
        (
            "POST",
            "/api/v1/submissions",
            {"json": {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}, "offering": a}},
        ),
    ]


@pytest.fixture
def alice_sub(client: TestClient, world: World) -> int:
    resp = client.post(
        "/api/v1/submissions",
        params={"wait": 10},
        headers=world.people["a:alice"].headers,
        json={"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder", "b2": "31"}},
    )
    assert resp.status_code == 202 and resp.json()["status"] == "graded", resp.text
    return int(resp.json()["id"])


@pytest.mark.parametrize("who", B_ROLES)
def test_nothing_of_another_offering_is_reachable(client: TestClient, world: World, alice_sub: int, who: str) -> None:
    headers = world.people[who].headers
    before = client.get(f"/api/v1/offerings/{world.a}/members", headers=world.people["a:instructor"].headers).json()
    for method, url, kwargs in _endpoints(world, alice_sub):
        resp = client.request(method, url, headers=headers, **kwargs)
        assert resp.status_code in (403, 404), f"{who} {method} {url}: {resp.status_code} {resp.text[:200]}"
        assert "alice" not in resp.text
    # Lists are scoped rather than refused: none of A's rows show through.
    listed = client.get("/api/v1/submissions", headers=headers).json()
    assert all(s["offering"] != world.a for s in listed) and alice_sub not in {s["id"] for s in listed}
    assert world.a not in {o["id"] for o in client.get("/api/v1/offerings", headers=headers).json()}
    assert all(s["offering"] != world.a for s in client.get("/api/v1/problem-sets", headers=headers).json())
    # Their own gradebook of the same set (B's assignment) holds none of A's students.
    own = client.get("/api/v1/gradebook/basic", headers=headers)
    if own.status_code == 200:
        assert own.json()["offering"] == world.b
        assert "alice@example.com" not in {r["email"] for r in own.json()["students"]}
    # Nothing was written in A.
    after = client.get(f"/api/v1/offerings/{world.a}/members", headers=world.people["a:instructor"].headers).json()
    assert after == before


# Within offering A: (role, method, url suffix kind, allowed?) following app.courses.permissions.MATRIX.
WITHIN = [
    ("a:ta", "GET", "gradebook", True),
    ("a:ta", "PATCH", "assignment", False),
    ("a:ta", "POST", "members", False),
    ("a:ta", "GET", "submission", True),
    ("a:ta", "POST", "override", False),  # TAs give overrides only where the offering allows it
    ("a:observer", "GET", "gradebook", True),
    ("a:observer", "GET", "submission", False),
    ("a:observer", "PATCH", "assignment", False),
    ("a:bob", "GET", "gradebook", False),
    ("a:bob", "GET", "submission", False),
    ("a:bob", "GET", "members", False),
    ("a:instructor", "PATCH", "assignment", True),
    ("a:instructor", "POST", "override", True),
]


@pytest.mark.parametrize(("who", "method", "what", "allowed"), WITHIN)
def test_roles_within_an_offering(
    client: TestClient, world: World, alice_sub: int, who: str, method: str, what: str, allowed: bool
) -> None:
    urls = {
        "gradebook": (f"/api/v1/gradebook/basic?offering={world.a}", {}),
        "assignment": (f"/api/v1/assignments/{world.assignment_a}", {"json": {"cooldown_s": 0}}),
        "members": (f"/api/v1/offerings/{world.a}/members", {"json": {"email": "x@example.com"}}),
        "submission": (f"/api/v1/submissions/{alice_sub}", {}),
        "override": (
            f"/api/v1/assignments/{world.assignment_a}/overrides",
            {"json": {"email": "bob@example.com", "extra_attempts": 1}},
        ),
    }
    url, kwargs = urls[what]
    resp = client.request(method, url, headers=world.people[who].headers, **kwargs)
    if allowed:
        assert resp.status_code in (200, 201), resp.text
    else:
        assert resp.status_code in (403, 404), resp.text


def test_a_token_narrowed_to_one_offering_reaches_nothing_else(client: TestClient, world: World, sessions) -> None:  # type: ignore[no-untyped-def]
    instructor = world.people["a:instructor"]
    # The instructor of A also teaches B; a token narrowed to B must not reach A.
    login = client.post("/api/v1/auth/login", json={"email": instructor.email, "password": instructor.password})
    assert login.status_code == 200
    # Put on B by the operator: an instructor's roster entry for an existing account waits for its acceptance.
    with sessions() as session:
        courses.enroll(session, offering=session.get(Offering, world.b), email=instructor.email,
                       role=MemberRole.INSTRUCTOR)  # fmt: skip
        session.commit()
    made = client.post("/api/v1/tokens", json={"name": "b only", "scopes": ["read", "instructor"], "offering": world.b})
    assert made.status_code == 201, made.text
    narrow = {"Authorization": f"Bearer {made.json()['token']}"}
    assert client.get(f"/api/v1/gradebook/basic?offering={world.b}", headers=narrow).status_code == 200
    assert client.get(f"/api/v1/gradebook/basic?offering={world.a}", headers=narrow).status_code == 404
    assert client.get(f"/api/v1/offerings/{world.a}", headers=narrow).status_code == 404
    # Without narrowing, the same user reaches both.
    assert client.get(f"/api/v1/gradebook/basic?offering={world.a}", headers=instructor.headers).status_code == 200
    # And nobody narrows a token to an offering they are not in.
    bad = client.post("/api/v1/tokens", json={"name": "x", "offering": 999})
    assert bad.status_code == 422


def test_tas_give_overrides_only_where_the_instructor_allows_it(client: TestClient, world: World) -> None:
    ta = world.people["a:ta"].headers
    url = f"/api/v1/assignments/{world.assignment_a}/overrides"
    body = {"email": "bob@example.com", "extra_attempts": 2}
    assert client.post(url, json=body, headers=ta).status_code == 403
    allow = client.patch(
        f"/api/v1/offerings/{world.a}", json={"ta_can_override": True}, headers=world.people["a:instructor"].headers
    )
    assert allow.status_code == 200 and allow.json()["ta_can_override"] is True
    assert client.post(url, json=body, headers=ta).status_code == 201
    # Still no date changes for a TA.
    assert (
        client.patch(f"/api/v1/assignments/{world.assignment_a}", json={"max_attempts": 9}, headers=ta).status_code
        == 403
    )
