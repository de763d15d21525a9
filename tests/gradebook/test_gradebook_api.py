"""Gradebook JSON, CSV and per-question statistics after a few real, graded submissions."""

from __future__ import annotations

import csv
import io

import pytest

from app.courses import accounts as account_service
from app.users.models import Role

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app


def test_gradebook_keeps_each_students_best_attempt(client, accounts, graded):  # type: ignore[no-untyped-def]
    resp = client.get("/api/v1/gradebook/basic", headers=accounts["instructor"].headers)
    assert resp.status_code == 200
    book = resp.json()
    assert book["policy"] == "best" and book["version"] == 1
    assert [(p["id"], p["max_score"]) for p in book["problems"]] == [("t1", 3.0), ("t2", 2.0), ("t3", 3.0)]
    rows = {r["email"]: r for r in book["students"]}
    assert set(rows) == {"alice@example.com", "bob@example.com"}  # staff are not students
    alice, bob = rows["alice@example.com"], rows["bob@example.com"]
    assert alice["cells"]["t1"] == {"best_score": 3.0, "max_score": 3.0, "attempts": 2, "pending": 0,
                                    "best_submission_id": graded["alice_t1_best"]["id"],
                                    "variant_seed": None}  # fmt: skip
    assert alice["cells"]["t2"]["best_score"] == 0.0 and alice["cells"]["t2"]["attempts"] == 1
    assert alice["cells"]["t3"] == {"best_score": None, "max_score": 3.0, "attempts": 0, "pending": 0,
                                    "best_submission_id": None, "variant_seed": None}  # fmt: skip
    assert (alice["total"], alice["max_total"]) == (3.0, 8.0)
    assert bob["cells"]["t1"]["best_score"] == 1.0 and bob["total"] == 1.0


def test_csv_export_quotes_and_defuses_formulas(client, accounts, graded, sessions):  # type: ignore[no-untyped-def]
    with sessions() as session:
        account_service.create_user(
            session, email="carol@example.com", role=Role.STUDENT, display_name='=HYPERLINK("x"), "李"'
        )
        session.commit()
    for url in ("/api/v1/gradebook/basic.csv", "/api/v1/gradebook/basic?format=csv"):
        resp = client.get(url, headers=accounts["instructor"].headers)
        assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/csv")
        assert 'filename="gradebook-basic.csv"' in resp.headers["content-disposition"]
        assert not resp.content.startswith(b"\xef\xbb\xbf")  # no BOM
        rows = list(csv.reader(io.StringIO(resp.content.decode("utf-8"))))
        assert rows[0] == ["email", "display_name", "student_id", "section", "t1", "t2", "t3", "total"]
        by_email = {r[0]: r for r in rows[1:]}
        assert by_email["alice@example.com"] == ["alice@example.com", "", "", "", "3", "0", "", "3"]
        assert by_email["bob@example.com"][4:] == ["1", "", "", "1"]
        assert by_email["carol@example.com"][1] == '\'=HYPERLINK("x"), "李"'  # quoted, and not a formula
        assert by_email["carol@example.com"][4:] == ["", "", "", "0"]


def test_stats_per_question_and_check(client, accounts, graded):  # type: ignore[no-untyped-def]
    resp = client.get("/api/v1/gradebook/basic/stats", headers=accounts["instructor"].headers)
    assert resp.status_code == 200
    stats = {p["id"]: p for p in resp.json()["problems"]}
    t1 = stats["t1"]
    assert (t1["submissions"], t1["students_attempted"], t1["students_graded"]) == (3, 2, 2)
    assert (t1["mean_best"], t1["median_best"], t1["full_marks_fraction"]) == (2.0, 2.0, 0.5)
    checks = {c["name"]: c for c in t1["checks"]}
    assert [c["name"] for c in t1["checks"]] == ["b1", "b2"]
    assert (checks["b1"]["results"], checks["b1"]["passed"], checks["b1"]["pass_rate"]) == (3, 3, 1.0)
    assert (checks["b2"]["passed"], checks["b2"]["pass_rate"]) == (1, 0.3333)
    assert t1["hardest_check"] == "b2"
    assert stats["t2"]["full_marks_fraction"] == 0.0 and stats["t2"]["checks"][0]["pass_rate"] == 0.0
    t3 = stats["t3"]
    assert (t3["submissions"], t3["mean_best"], t3["checks"], t3["hardest_check"]) == (0, None, [], None)


def test_gradebook_is_for_instructors_only(client, accounts, basic_set):  # type: ignore[no-untyped-def]
    for path in ("/api/v1/gradebook/basic", "/api/v1/gradebook/basic.csv", "/api/v1/gradebook/basic/stats"):
        assert client.get(path, headers=accounts["alice"].headers).status_code == 403
        assert client.get(path).status_code == 401
    assert client.get("/api/v1/gradebook/nope", headers=accounts["instructor"].headers).status_code == 404
