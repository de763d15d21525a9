"""`autograder webhooks` on a fresh SQLite database: an instructor's endpoint for an offering, its secret printed
once, a ping sent by the real sender to a real receiver that verifies it, the delivery log, a redelivery."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from app.cli.main import app
from app.config import get_settings
from app.db import make_engine, make_session_factory
from app.webhooks.sender import WebhookSender
from tests.conftest import REPO
from tests.ops.receiver import running_receiver

Run = Callable[..., Result]


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Run]:
    monkeypatch.setenv("AUTOGRADER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("AUTOGRADER_PROBLEMS_DIR", str(REPO / "problems"))
    monkeypatch.setenv("AUTOGRADER_WEBHOOK_ALLOW_PRIVATE", "true")
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        get_settings.cache_clear()
        return runner.invoke(app, list(args))

    yield invoke
    get_settings.cache_clear()


def test_an_offerings_webhook_from_the_shell(run: Run) -> None:
    assert run("users", "create", "--email", "teacher@example.com").exit_code == 0
    assert run("users", "create", "--email", "student@example.com").exit_code == 0
    assert run("courses", "create", "nlp").exit_code == 0
    made = run("offerings", "create", "nlp", "2027-spring", "--instructor", "teacher@example.com")
    assert made.exit_code == 0, made.output
    offering = made.output.split()[1]
    with running_receiver() as receiver:
        refused = run("webhooks", "add", offering, receiver.url, "--owner", "student@example.com")
        assert refused.exit_code == 1 and "not an instructor" in refused.output and "whsec_" not in refused.output
        added = run("webhooks", "add", offering, receiver.url, "--owner", "teacher@example.com")
        assert added.exit_code == 0, added.output
        endpoint = added.output.split()[1]
        receiver.secret = added.output.split("secret (shown only now): ")[1].strip()
        assert receiver.secret.startswith("whsec_")
        listed = run("webhooks", "list", offering)
        assert receiver.url in listed.output and "whsec_" not in listed.output
        assert run("webhooks", "ping", offering, endpoint).exit_code == 0
        assert run("webhooks", "list", "999").exit_code == 1  # no such offering: a clear error, not a trace

        settings = get_settings()
        engine = make_engine(settings.resolved_database_url)
        sender = WebhookSender(settings, make_session_factory(engine))
        try:
            assert sender.run_once() == 1
            (got,) = receiver.received
            assert got["verified"] and got["payload"]["type"] == "webhook.ping"
            log = run("webhooks", "deliveries", offering, endpoint)
            assert "succeeded" in log.output and "200" in log.output and got["headers"]["webhook-id"] in log.output
            delivery = log.output.split()[0]
            assert run("webhooks", "redeliver", offering, endpoint, delivery).exit_code == 0
            assert sender.run_once() == 1
        finally:
            sender.stop()
            engine.dispose()
        second = receiver.received[1]
        assert second["verified"] and second["headers"]["webhook-id"] == got["headers"]["webhook-id"]
    assert run("webhooks", "delete", offering, endpoint).exit_code == 0
    assert run("webhooks", "list", offering).output.strip() == ""
