"""Gradebook fixtures: the app fixtures and a few graded submissions from two students (and one instructor)."""

from __future__ import annotations

import pytest

from tests.app.conftest import accounts, basic_set, client  # noqa: F401


def submit(http, account, problem: str, answers: dict[str, str]) -> dict:  # type: ignore[no-untyped-def,type-arg]
    body = {"problem_set": "basic", "problem": problem, "answers": answers}
    resp = http.post("/api/v1/submissions", json=body, headers=account.headers, params={"wait": 10})
    assert resp.status_code == 202 and resp.json()["status"] == "graded", resp.text
    return resp.json()  # type: ignore[no-any-return]


@pytest.fixture
def graded(client, accounts, basic_set):  # type: ignore[no-untyped-def]  # noqa: F811
    """alice: t1 1/3 then 3/3, t2 0/2; bob: t1 1/3; the instructor's own try must not count."""
    alice, bob = accounts["alice"], accounts["bob"]
    return {
        "alice_t1_first": submit(client, alice, "t1", {"b1": "Encoder", "b2": "31"}),
        "alice_t1_best": submit(client, alice, "t1", {"b1": "encoder", "b2": "2^5"}),
        "alice_t2": submit(client, alice, "t2", {"b1": "A"}),
        "bob_t1": submit(client, bob, "t1", {"b1": "Encoder", "b2": "33"}),
        "staff_t1": submit(client, accounts["instructor"], "t1", {"b1": "decoder", "b2": "0"}),
    }
