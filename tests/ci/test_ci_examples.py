"""The CI examples in docs/ci/ are files a course copies: their `autograder submit` line runs against a real server."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree as ET

import httpx
import pytest
import yaml

from app.config import Settings
from tests.conftest import REPO
from tests.ops.receiver import running_receiver

EXAMPLES = {
    "github-actions.yml": lambda doc: [s["run"] for s in doc["jobs"]["grade"]["steps"] if "run" in s],
    "gitlab-ci.yml": lambda doc: list(doc["autograder"]["script"]),
}


def submit_line(name: str) -> list[str]:
    doc = yaml.safe_load((REPO / "docs" / "ci" / name).read_text())
    steps = [run for run in EXAMPLES[name](doc) if "autograder submit" in run]
    assert len(steps) == 1, "one submit step per example"
    # The CI's own placeholders (run ids) become fixed text; the secrets come from the environment, as in CI.
    line = re.sub(r"\$\{\{[^}]*\}\}|\$\{[A-Z_]+\}", "42", steps[0])
    args = shlex.split(line)
    assert args[:2] == ["autograder", "submit"]
    assert not any("agt_" in a for a in args), "the token must come from the secret store, not the file"
    return args[1:]


@pytest.fixture
def settings(settings: Settings) -> Settings:
    # The receiver runs on 127.0.0.1, as a CI runner on a private network would.
    return settings.model_copy(update={"webhook_allow_private": True, "webhook_poll_s": 0.05})


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_submits_and_writes_junit(name, live_server, accounts, basic_set, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    args = submit_line(name)
    # The examples grade attention q5; the test server has the small fixture set, so only the target changes.
    args[args.index("--set") + 1] = basic_set
    args[args.index("--problem") + 1] = "t1"
    file_at = next(i for i, a in enumerate(args) if a.endswith(".py"))
    args[file_at : file_at + 1] = ["--answers", '{"b1": "encoder", "b2": "32"}']
    token = accounts["alice"].token
    env = {**os.environ, "AUTOGRADER_URL": live_server, "AUTOGRADER_TOKEN": token}
    cli = Path(sys.executable).parent / "autograder"
    with running_receiver() as receiver:
        # The course's CI system registered a webhook with the same token, so it is told when the grade is in.
        hook = httpx.post(
            f"{live_server}/api/v1/webhooks",
            json={"url": receiver.url, "events": ["submission.graded"]},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert hook.status_code == 201, hook.text
        receiver.secret = hook.json()["secret"]
        done = subprocess.run([str(cli), *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        (delivery,) = receiver.wait_for(1)
    suite = ET.parse(tmp_path / "autograder-report.xml").getroot()
    assert suite.get("tests") == "2" and suite.get("failures") == "0"
    assert delivery["verified"] and delivery["payload"]["type"] == "submission.graded"
    assert delivery["payload"]["data"]["verdict"] == "accepted" and delivery["payload"]["data"]["source"] == "ci"
