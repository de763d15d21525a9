"""Per mutant of a code problem's gate, how many students' counted submissions fail exactly its checks."""

from __future__ import annotations

from tests.app.test_problemset_upload import upload, zip_dir
from tests.conftest import FIXTURE_SETS
from tests.web.conftest import login

# codeset's one mutant (a - b) fails both checks of c1, as does a product; the partial one fails only the tensors.
PRODUCT = "def add(a, b):\n    return a * b\n"
NUMBERS_ONLY = "def add(a, b):\n    if isinstance(a, int):\n        return a + b\n    return a * b\n"
CORRECT = "def add(a, b):\n    return a + b\n"


def _submit(client, account, code: str) -> float:  # type: ignore[no-untyped-def]
    body = {"problem_set": "codeset", "problem": "c1", "code": code}
    resp = client.post("/api/v1/submissions", params={"wait": 60}, json=body, headers=account.headers).json()
    assert resp["status"] == "graded", resp
    return float(resp["final_score"])


def test_students_counted_like_the_gates_mutants(client, accounts) -> None:  # type: ignore[no-untyped-def]
    assert upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "codeset")).status_code == 201
    alice, bob = accounts["alice"], accounts["bob"]
    assert _submit(client, alice, PRODUCT) == 0.0
    assert _submit(client, alice, NUMBERS_ONLY) == 1.0  # alice's counted (best) attempt fails only the tensors
    assert _submit(client, bob, PRODUCT) == 0.0  # bob's behaves like the mutant
    _submit(client, accounts["instructor"], PRODUCT)  # a staff try is no student's

    stats = client.get("/api/v1/gradebook/codeset/stats", headers=accounts["instructor"].headers).json()
    (c1,) = stats["problems"]
    assert c1["mutants"] == [
        {"mutant": "subtracts.py", "failed_checks": ["adds_numbers", "adds_tensors"], "students": 1}
    ]
    assert c1["wrong_answers"] == []

    login(client, accounts["instructor"])
    page = client.get("/instructor/sets/codeset/gradebook").text
    assert "Students who behave like a mutant" in page and "<code>subtracts.py</code>" in page

    assert _submit(client, bob, CORRECT) == 3.0  # now bob's counted attempt passes everything
    stats = client.get("/api/v1/gradebook/codeset/stats", headers=accounts["instructor"].headers).json()
    assert stats["problems"][0]["mutants"][0]["students"] == 0
