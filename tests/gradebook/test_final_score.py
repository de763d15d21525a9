"""One final score (automatic + manual, less the late penalty) wherever a grade is shown, in SQL as in Python."""

from __future__ import annotations

import csv
import io
import re
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from app.problemsets.service import get_latest
from app.submissions.models import Grade, Status, Submission
from tests.app.test_late_policy import load, set_with_due
from tests.gradebook.conftest import submit
from tests.web.conftest import login

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app

T1_RUBRIC = "    rubric:\n      - {id: r1, points: 2, description: shows the working}\n"


def late_set_with_rubric(tmp_path: Path) -> Path:
    """The basic set, due 1.5 days ago at 20 % a day (so 40 % off), with a rubric item on t1 (worth 3 + 2)."""
    root = set_with_due(tmp_path, 1.5, 0.2, 3)
    spec = root / "problemset.yaml"
    # A problem with automatic and manual points, so a reader that drops either term shows a different number.
    anchor = "explanation: prompts/t1_explanation.md\n"
    spec.write_text(spec.read_text().replace(anchor, anchor + T1_RUBRIC))
    return root


def number_after(pattern: str, html: str) -> float:
    match = re.search(pattern, html, re.S)
    assert match, f"{pattern!r} not on the page"
    return float(match.group(1))


def test_late_hand_graded_score_is_the_same_everywhere(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    load(sessions, late_set_with_rubric(tmp_path))
    alice, staff = accounts["alice"], accounts["instructor"].headers
    sub = submit(client, alice, "t1", {"b1": "encoder", "b2": "32"})
    assert (sub["score"], sub["late_penalty"], sub["verdict"]) == (3.0, 0.4, "pending_manual")
    graded = client.post(f"/api/v1/submissions/{sub['id']}/manual-grade", json={"manual_score": 2.0, "feedback": ""},
                         headers=staff).json()  # fmt: skip
    expected = round((3.0 + 2.0) * (1 - 0.4), 6)  # 3, where leaving out the penalty gives full marks (5)

    detail = client.get(f"/api/v1/submissions/{sub['id']}", headers=alice.headers).json()
    listed = next(s for s in client.get("/api/v1/submissions", headers=alice.headers).json() if s["id"] == sub["id"])
    book = client.get("/api/v1/gradebook/basic", headers=staff).json()
    row = next(r for r in book["students"] if r["user_id"] == alice.id)
    table = csv.DictReader(io.StringIO(client.get("/api/v1/gradebook/basic.csv", headers=staff).text))
    csv_row = next(r for r in table if r["email"] == alice.email)
    stats = next(p for p in client.get("/api/v1/gradebook/basic/stats", headers=staff).json()["problems"]
                 if p["id"] == "t1")  # fmt: skip
    login(client, alice)
    history = client.get("/history").text
    page = client.get(f"/submissions/{sub['id']}").text
    set_page = client.get("/sets/basic").text

    seen = {
        "manual-grade reply": graded["final_score"],
        "API detail": detail["final_score"],
        "API list": listed["final_score"],
        "gradebook cell": row["cells"]["t1"]["best_score"],
        "gradebook total": row["total"],
        "gradebook CSV": float(csv_row["t1"]),
        "CSV total": float(csv_row["total"]),
        "stats mean best": stats["mean_best"],
        "stats median best": stats["median_best"],
        "history page": number_after(rf'href="/submissions/{sub["id"]}".*?class="num">([\d.]+) / 5<', history),
        "submission page": number_after(r'class="score">([\d.]+)</span><span class="of"> / 5<', page),
        "set page best so far": number_after(r"Best so far: <strong>([\d.]+)</strong>", set_page),
    }
    wrong = {reader: score for reader, score in seen.items() if score != expected}
    assert not wrong, f"final score {expected} expected everywhere; these readers differ: {wrong}"
    # The points lost to lateness count: full marks before the penalty is not full marks.
    assert detail["verdict"] == "partial" and stats["full_marks_fraction"] == 0.0


def test_final_score_in_sql_matches_python(accounts, basic_set, sessions):  # type: ignore[no-untyped-def]
    cases = [(3.0, None, 0.0), (1.0, 2.5, 0.0), (0.1, 0.2, 0.3), (2.0, None, 0.5), (2.0, 1.0, 1.0)]
    with sessions() as session:
        version_id = get_latest(session, "basic").id
        for auto, manual, penalty in cases:
            sub = Submission(user_id=accounts["alice"].id, problem_set_version_id=version_id, problem_id="t3",
                             payload={}, status=Status.GRADED)  # fmt: skip
            sub.grade = Grade(auto_score=auto, manual_score=manual, late_penalty=penalty, max_score=5.0,
                              verdict="partial")  # fmt: skip
            session.add(sub)
        session.commit()
        in_python = {g.id: g.final_score for g in session.scalars(select(Grade))}
        # Selecting the hybrid computes it in the database, from the stored columns.
        in_sql = {i: round(s, 6) for i, s in session.execute(select(Grade.id, Grade.final_score))}
    assert in_python == in_sql
    assert sorted(in_python.values()) == [0.0, 0.21, 1.0, 3.0, 3.5]


def test_a_regrade_judges_the_same_discounted_score_as_the_manual_grade(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    load(sessions, late_set_with_rubric(tmp_path))
    alice, staff = accounts["alice"], accounts["instructor"].headers
    sub = submit(client, alice, "t1", {"b1": "encoder", "b2": "32"})
    client.post(f"/api/v1/submissions/{sub['id']}/manual-grade", json={"manual_score": 2.0, "feedback": ""},
                headers=staff).raise_for_status()  # fmt: skip
    hand_graded = client.get(f"/api/v1/submissions/{sub['id']}", headers=staff).json()
    assert hand_graded["verdict"] == "partial"  # 5/5 before the penalty, 3/5 after it
    assert client.post(f"/api/v1/submissions/{sub['id']}/regrade", headers=staff).status_code == 202
    deadline = time.monotonic() + 20
    while (again := client.get(f"/api/v1/submissions/{sub['id']}", headers=staff).json())["status"] != "graded":
        assert time.monotonic() < deadline, again
        time.sleep(0.05)
    assert (again["verdict"], again["final_score"], again["manual_score"]) == ("partial", 3.0, 2.0)
