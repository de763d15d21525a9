"""`autograder submit` against a real server: a sealed score prints the release message, never a number, and
exits 1; the fourth attempt at a 3-attempt assignment is refused with the server's message (exit 2)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from datetime import timedelta

import pytest
import uvicorn
from typer.testing import CliRunner

from app.cli.main import app as cli
from app.config import Settings
from app.db import utcnow
from app.main import create_app
from tests.courses.conftest import World


@pytest.fixture
def server(settings: Settings, world: World) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning")
    instance = uvicorn.Server(config)
    thread = threading.Thread(target=instance.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not instance.started and time.monotonic() < deadline:
        time.sleep(0.05)
    assert instance.started
    yield f"http://127.0.0.1:{port}"
    instance.should_exit = True
    thread.join(timeout=30)


def test_submit_respects_the_release_policy_and_the_attempt_limit(server: str, world: World, client) -> None:  # type: ignore[no-untyped-def]
    due = (utcnow() + timedelta(days=1)).isoformat()
    resp = client.patch(
        f"/api/v1/assignments/{world.assignment_a}",
        headers=world.people["a:instructor"].headers,
        json={"release_scores": "after_due", "due_at": due, "max_attempts": 1},
    )
    assert resp.status_code == 200, resp.text
    runner = CliRunner()
    args = [
        "submit",
        "--set",
        "basic",
        "--problem",
        "t1",
        "--answers",
        '{"b1": "encoder", "b2": "32"}',
        "--url",
        server,
        "--token",
        world.people["a:alice"].token,
        "--wait",
        "20",
    ]
    first = runner.invoke(cli, args)
    assert first.exit_code == 1, first.output
    assert "scores are released later" in first.output and "3.0" not in first.output and "None" not in first.output
    second = runner.invoke(cli, args)
    assert second.exit_code == 2 and "no attempts left at t1: all 1 are used" in second.output
