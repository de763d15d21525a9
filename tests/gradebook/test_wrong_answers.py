"""The most common wrong answers per blank: grouped as the grader reads them, students counted once, texts for
staff who may read submissions only."""

from __future__ import annotations

from graders.answers.registry import normalized_answer
from graders.answers.specs import NumericSpec, SymbolicSpec, TextSpec
from tests.courses.conftest import world  # noqa: F401
from tests.gradebook.conftest import submit
from tests.web.conftest import login


def test_answers_are_grouped_by_the_graders_own_reading() -> None:
    text = TextSpec(kind="text", answers=["encoder"])
    assert normalized_answer(" Decoder。", text) == normalized_answer("DECODER", text) == "decoder"
    number = NumericSpec(kind="numeric", answer=32)
    assert normalized_answer("3.1e1", number) == normalized_answer("31", number) == "31"
    formula = SymbolicSpec(kind="symbolic", answer="sqrt(d_k)", symbols=["d_k"])
    # Parsed only (no SymPy worker): LaTeX and plain spellings meet; what does not parse reads as nothing.
    assert normalized_answer("\\sqrt{d_k}", formula) == normalized_answer("sqrt( d_k )", formula) == "sqrt(d_k)"
    assert normalized_answer("O(d_k^2)", formula) == "d_k ** 2" and normalized_answer("sqrt(d_k", formula) is None


def test_stats_list_each_blanks_most_common_wrong_answers(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    alice, bob = accounts["alice"], accounts["bob"]
    submit(client, alice, "t1", {"b1": "Decoder", "b2": "31"})
    submit(client, alice, "t1", {"b1": " decoder。", "b2": "3.1e1"})  # the same answers again: alice counts once
    submit(client, bob, "t1", {"b1": "DECODER", "b2": "33"})
    submit(client, bob, "t1", {"b1": "encoder", "b2": ""})  # a right answer and an empty blank are not listed
    submit(client, alice, "t1", {"b1": "x" * 300, "b2": "32"})  # a long answer is shown shortened
    submit(client, accounts["instructor"], "t1", {"b1": "transformer", "b2": "0"})  # staff tries are left out
    submit(client, alice, "t2", {"b1": "A"})
    submit(client, bob, "t2", {"b1": "C"})
    for wrong in ("1", "2", "3", "4"):
        submit(client, bob, "t1", {"b1": "encoder", "b2": wrong})

    resp = client.get("/api/v1/gradebook/basic/stats", headers=accounts["instructor"].headers)
    assert resp.status_code == 200
    stats = {p["id"]: p for p in resp.json()["problems"]}
    b1, b2 = stats["t1"]["wrong_answers"]
    assert b1["part"] == "b1" and b1["wrong_students"] == 2
    assert b1["top"] == [
        {"answer": "decoder", "students": 2, "accepted_now": False, "known_wrong": True},  # the set's reject example
        {"answer": "x" * 199 + "…", "students": 1, "accepted_now": None, "known_wrong": False},  # cut short: unknown
    ]
    assert b1["takes_aliases"] and not b2["takes_aliases"]  # a text blank takes aliases, a number does not
    # Most students first, then in text order; five at most of the six wrong numbers.
    assert b2["part"] == "b2" and b2["wrong_students"] == 2
    assert [(w["answer"], w["students"]) for w in b2["top"]] == [("1", 1), ("2", 1), ("3", 1), ("31", 1), ("33", 1)]
    assert stats["t2"]["wrong_answers"] == [
        {
            "part": "b1",
            "wrong_students": 2,
            "top": [
                {"answer": "A", "students": 1, "accepted_now": False, "known_wrong": False},
                {"answer": "C", "students": 1, "accepted_now": False, "known_wrong": False},
            ],
            "takes_aliases": False,
        }
    ]
    assert stats["t3"]["wrong_answers"] == []  # an essay is graded by hand: no wrong answers to group


def test_wrong_answer_texts_only_for_staff_who_read_submissions(client, world):  # type: ignore[no-untyped-def]  # noqa: F811
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Decoder", "b2": "31"}, "offering": world.a}
    resp = client.post("/api/v1/submissions", json=body, headers=world.people["a:alice"].headers, params={"wait": 10})
    assert resp.json()["status"] == "graded"
    page = f"/instructor/sets/basic/gradebook?offering={world.a}"
    for key, texts in (("a:instructor", True), ("a:ta", True), ("a:observer", False)):
        client.cookies.clear()
        login(client, world.people[key])
        html = client.get(page).text
        assert "Most common wrong answers" in html, key
        assert ("<code>decoder</code>" in html) is texts and ("<code>31</code>" in html) is texts, key
        assert ("Only staff who may read submissions see the answers themselves." in html) is not texts, key
    # The API says the same to an observer: the counts, no text; another offering's staff get nothing of A.
    observed = client.get("/api/v1/gradebook/basic/stats", params={"offering": world.a},
                          headers=world.people["a:observer"].headers)  # fmt: skip
    assert observed.status_code == 200, observed.text
    t1 = {p["id"]: p for p in observed.json()["problems"]}["t1"]
    assert t1["wrong_answers"][0] == {
        "part": "b1",
        "wrong_students": 1,
        "top": [{"answer": None, "students": 1, "accepted_now": None, "known_wrong": False}],
        "takes_aliases": True,
    }
    assert "decoder" not in observed.text
    other = client.get("/api/v1/gradebook/basic/stats", params={"offering": world.a},
                       headers=world.people["b:instructor"].headers)  # fmt: skip
    assert other.status_code == 404 and "decoder" not in other.text
