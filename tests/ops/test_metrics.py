"""/metrics: protected by the `metrics` scope; queue, grading, verdict and HTTP metrics; several processes summed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families

from app.api.metrics import process_registry
from app.config import Settings
from app.courses import accounts as account_service
from app.errors import Invalid
from app.main import create_app
from app.users.models import User
from tests.app.test_visibility_and_failures import wait_graded
from tests.conftest import REPO

ANSWERS = {"b1": "encoder", "b2": "31"}


def metrics_token(sessions, email: str = "instructor@example.com") -> str:  # type: ignore[no-untyped-def]
    with sessions() as session:
        user = session.query(User).filter_by(email=email).one()
        _, plain = account_service.create_token(session, user=user, name="prometheus", scopes=["metrics"])
        session.commit()
    return plain


def scrape(client: TestClient, token: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    resp = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert resp.status_code == 200, resp.text
    assert resp.headers["content-type"].startswith("text/plain")
    samples = {}
    for family in text_string_to_metric_families(resp.text):
        for s in family.samples:
            samples[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return samples


def value(samples, name: str, **labels: str) -> float:  # type: ignore[no-untyped-def]
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def test_metrics_are_not_public(client, accounts, sessions) -> None:  # type: ignore[no-untyped-def]
    assert client.get("/metrics").status_code == 401
    # An instructor's ordinary token lacks the scope; a student cannot get it at all.
    assert client.get("/metrics", headers=accounts["instructor"].headers).status_code == 403
    assert client.get("/metrics", headers=accounts["alice"].headers).status_code == 403
    with sessions() as session, pytest.raises(Invalid, match="metrics"):
        alice = session.query(User).filter_by(email="alice@example.com").one()
        account_service.create_token(session, user=alice, name="x", scopes=["metrics"])
    assert client.get("/metrics", headers={"Authorization": f"Bearer {metrics_token(sessions)}"}).status_code == 200


def test_grading_and_http_metrics_move(client, accounts, basic_set, sessions) -> None:  # type: ignore[no-untyped-def]
    token = metrics_token(sessions)
    before = scrape(client, token)
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    sub_id = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers).json()["id"]
    assert wait_graded(client, accounts["alice"], sub_id)["verdict"] == "partial"
    after = scrape(client, token)

    def delta(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert delta("autograder_verdicts_total", kind="fill_in", verdict="partial") == 1
    assert delta("autograder_grading_duration_seconds_count", kind="fill_in") == 1
    assert delta("autograder_grading_duration_seconds_sum", kind="fill_in") > 0
    assert delta("autograder_check_duration_seconds_count", category="answer") == 2  # two parts, two checks
    route = {"method": "POST", "route": "/api/v1/submissions", "status": "202"}
    assert delta("autograder_http_request_duration_seconds_count", **route) == 1
    assert value(after, "autograder_submissions", status="graded", source="ci") == 1  # a token submits as "ci"
    assert value(after, "autograder_queue_depth") == 0


def test_queue_depth_and_oldest_age(settings: Settings, accounts, basic_set, sessions) -> None:  # type: ignore[no-untyped-def]
    # No workers, and answers not graded by the request (app/worker/inline.py): what is submitted stays queued.
    with TestClient(create_app(settings.model_copy(update={"workers": 0, "grade_answers_inline": False}))) as client:
        body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
        for _ in range(3):
            assert client.post("/api/v1/submissions", json=body, headers=accounts["bob"].headers).status_code == 202
        samples = scrape(client, metrics_token(sessions))
    assert value(samples, "autograder_queue_depth") == 3
    assert value(samples, "autograder_submissions", status="queued", source="ci") == 3
    assert value(samples, "autograder_queue_oldest_age_seconds") >= 0
    assert ("autograder_queue_oldest_age_seconds", ()) in samples


RECORD = """
from app.metrics import registry
registry.observe_grading("code", "accepted", 2.0, [])
registry.observe_internal_error("SandboxError")
"""


def test_several_processes_are_summed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path)}
    for _ in range(2):  # two worker processes, each recording one job into the shared folder
        subprocess.run([sys.executable, "-c", RECORD], env=env, check=True, timeout=120)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    registry = process_registry()
    assert registry.get_sample_value("autograder_verdicts_total", {"kind": "code", "verdict": "accepted"}) == 2
    assert registry.get_sample_value("autograder_grading_duration_seconds_count", {"kind": "code"}) == 2
    assert registry.get_sample_value("autograder_grading_internal_errors_total", {"error_type": "SandboxError"}) == 2


def test_the_dashboard_charts_only_metrics_that_exist(client, accounts, basic_set, sessions) -> None:  # type: ignore[no-untyped-def]
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    sub_id = client.post("/api/v1/submissions", json=body, headers=accounts["alice"].headers).json()["id"]
    wait_graded(client, accounts["alice"], sub_id)
    exposed = {name for name, _ in scrape(client, metrics_token(sessions))}
    dashboard = json.loads((REPO / "docs" / "grafana-dashboard.json").read_text())
    charted = {
        name
        for panel in dashboard["panels"]
        for target in panel["targets"]
        for name in re.findall(r"autograder_[a-z_]+", target["expr"])
    }
    # A labelled counter nobody has incremented yet has no sample; it is still declared, under its family name.
    declared = {f.name for f in process_registry().collect()}
    declared |= {name + "_total" for name in declared}
    assert charted and charted <= exposed | declared, charted - exposed - declared
    # The table of docs/operations.md explains each metric: every one it names exists, and every one declared is in it.
    doc = (REPO / "docs" / "operations.md").read_text().split("\n## Metrics\n")[1].split("\n## ")[0]
    explained = set(re.findall(r"^\| `(autograder_[a-z_]+)`", doc, flags=re.M))
    assert explained and explained <= exposed | declared, explained - exposed - declared
    families = {f.name for f in process_registry().collect()}  # counters without their _total
    families |= {re.sub(r"_(bucket|count|sum|created|total)$", "", name) for name in exposed}
    ours = {name for name in families if name.startswith("autograder_")}
    missing = ours - {name.removesuffix("_total") for name in explained}
    assert not missing, f"metrics the table in docs/operations.md does not explain: {missing}"
    assert {"autograder_queue_depth", "autograder_grading_duration_seconds_bucket"} <= charted & exposed
