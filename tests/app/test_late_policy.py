"""The late policy: a per-day penalty in the derived final score, and a closed set refuses students."""

from __future__ import annotations

import shutil
from datetime import timedelta
from pathlib import Path

from app.courses import course_sets
from app.db import utcnow
from app.submissions.lateness import days_late, late_penalty
from graders.problemset.loader import load_problem_set
from tests.conftest import FIXTURE_SETS


def set_with_due(tmp_path: Path, due_days_ago: float, penalty: float, max_days: int) -> Path:
    root = tmp_path / "basic"
    shutil.copytree(FIXTURE_SETS / "basic", root)
    due = (utcnow() - timedelta(days=due_days_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    text = (root / "problemset.yaml").read_text()
    policy = f"due_at: {due}\nlate_policy: {{penalty_per_day: {penalty}, max_late_days: {max_days}}}\n"
    (root / "problemset.yaml").write_text(text.replace("show_explanations:", policy + "show_explanations:"))
    return root


def load(sessions, root: Path) -> None:  # type: ignore[no-untyped-def]
    with sessions() as session:
        course_sets.load_dir(session, root=root, grader=None)
        session.commit()


def test_days_late_rounds_up(tmp_path: Path) -> None:
    spec = load_problem_set(set_with_due(tmp_path, 1.5, 0.1, 3)).spec
    assert spec.due_at is not None
    assert days_late(spec, spec.due_at) == 0
    assert days_late(spec, spec.due_at + timedelta(hours=1)) == 1
    assert days_late(spec, spec.due_at + timedelta(days=2, seconds=1)) == 3
    assert late_penalty(spec, spec.due_at + timedelta(days=30)) == 1.0


def test_late_submission_loses_the_penalty(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    load(sessions, set_with_due(tmp_path, 1.5, 0.25, 3))  # 2 days late: 50 % off
    resp = client.post(
        "/api/v1/submissions",
        params={"wait": 10},
        json={"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}},
        headers=accounts["alice"].headers,
    ).json()
    assert resp["score"] == 2.0 and resp["late_penalty"] == 0.5 and resp["final_score"] == 1.0


def test_closed_set_refuses_students_not_instructors(client, accounts, sessions, tmp_path):  # type: ignore[no-untyped-def]
    load(sessions, set_with_due(tmp_path, 5, 0.1, 1))
    body = {"problem_set": "basic", "problem": "t2", "answers": {"b1": "B"}}
    refused = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers)
    assert refused.status_code == 403 and "closed" in refused.text
    allowed = client.post("/api/v1/submissions", json=body, headers=accounts["instructor"].headers)
    assert allowed.status_code == 202
