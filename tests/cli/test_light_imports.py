"""The command line is light: a command that grades no code never imports torch, the sandbox or a check library
(checklibs/, issue 21). Gradescope's run_autograder, `submit` in CI and every admin command would otherwise pay
seconds of torch import for nothing.

Each command runs in a fresh interpreter against a real SQLite database (and `submit` against a real server), and
reports which of those modules it left in ``sys.modules``. Its exit status and output are checked too, so that a
command that failed before reaching its work cannot pass for a light one.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from app.config import Settings
from app.courses import accounts, course_sets
from app.courses import service as courses
from app.db import make_engine, make_session_factory
from app.main import create_app
from app.migrate import upgrade
from app.users.models import Role
from tests.conftest import FIXTURE_SETS, REPO

pytestmark = pytest.mark.slow  # a dozen fresh interpreters

HEAVY = ("torch", "graders.sandbox", "checklibs")

# Runs the real `autograder` command line, then writes what it imported where the test reads it.
PROBE = """
import json, os, sys
from app.cli.main import app
try:
    app(sys.argv[1:], prog_name="autograder")
    code = 0
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
heavy = [name for name in json.loads(os.environ["LIGHT_PROBE_HEAVY"]) if name in sys.modules]
with open(os.environ["LIGHT_PROBE_OUT"], "w") as out:
    json.dump({"exit": code, "heavy": heavy}, out)
"""

SUBMIT_T1 = ["submit", "--set", "basic", "--problem", "t1", "--answers", '{"b1": "encoder", "b2": "32"}']
CH9_Q1 = {"b1": "√d_k", "b2": "V", "b3": "查找的信息", "b4": "匹配", "b5": "内容"}


@dataclass
class Place:
    data_dir: Path
    roster_csv: Path
    offering_id: int
    token: str  # a student's submit token
    url: str  # a real server on the same database, with the basic set loaded


def _settings(data_dir: Path) -> Settings:
    return Settings(
        data_dir=data_dir,
        secret_key="test-secret-" + "x" * 32,
        workers=1,
        problems_dir=FIXTURE_SETS,
        load_problems_on_start=False,
        prewarm_sandbox=False,
    )


@pytest.fixture(scope="module")
def place(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Place]:
    root = tmp_path_factory.mktemp("light")
    settings = _settings(root / "data")
    settings.data_dir.mkdir()
    upgrade(settings.resolved_database_url)
    engine = make_engine(settings.resolved_database_url)
    with make_session_factory(engine)() as session:
        accounts.create_user(session, email="staff@example.com", role=Role.INSTRUCTOR)
        student, _ = accounts.create_user(session, email="student@example.com", role=Role.STUDENT)
        _, token = accounts.create_token(session, user=student, name="ci", scopes=["submit"])
        course = courses.create_course(session, slug="light", title="Light")
        offering = courses.create_offering(session, course=course, slug="2027", title="2027")
        course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        session.commit()
        offering_id = offering.id
    engine.dispose()
    roster = root / "roster.csv"
    roster.write_text("email,name,section\nann@example.com,Ann,A\nbo@example.com,Bo,B\n", encoding="utf-8")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        server = uvicorn.Server(uvicorn.Config(create_app(settings), log_level="warning"))
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        while not server.started and thread.is_alive():
            time.sleep(0.05)
        assert server.started
        try:
            yield Place(settings.data_dir, roster, offering_id, token, f"http://127.0.0.1:{sock.getsockname()[1]}")
        finally:
            server.should_exit = True
            thread.join()


def run_light(place: Place, args: list[str], tmp_path: Path) -> tuple[int, list[str], str]:
    """(exit status, the heavy modules it imported, its output) of ``autograder ARGS`` in a fresh interpreter."""
    report = tmp_path / "probe.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRADER_")}
    env |= {
        "AUTOGRADER_DATA_DIR": str(place.data_dir),
        "AUTOGRADER_PROBLEMS_DIR": str(REPO / "problems"),
        "LIGHT_PROBE_OUT": str(report),
        "LIGHT_PROBE_HEAVY": json.dumps(HEAVY),
    }
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], cwd=REPO, env=env, capture_output=True, text=True, check=False
    )
    assert report.is_file(), done.stdout + done.stderr
    doc = json.loads(report.read_text())
    return doc["exit"], doc["heavy"], done.stdout + done.stderr


# (arguments, expected exit status, a line its output must hold); {name} fields come from the Place.
COMMANDS = {
    "help": (["--help"], 0, "Autograding for course exercises"),
    "users create": (["users", "create", "--email", "new@example.com"], 0, "created"),
    "tokens create": (["tokens", "create", "--email", "staff@example.com", "--scope", "read"], 0, "agt_"),
    "courses create": (["courses", "create", "another", "--title", "Another"], 0, "course another"),
    "courses list": (["courses", "list"], 0, "light: Light"),
    "roster import": (["roster", "import", "{offering_id}", "{roster_csv}", "--apply"], 0, "2 added"),
    "submit": ([*SUBMIT_T1, "--url", "{url}", "--token", "{token}", "--wait", "120"], 0, "accepted"),
    "grade fill-in": (["grade", "--set", "ch9", "--problem", "q1", "--answers", json.dumps(CH9_Q1)], 0, "accepted"),
    "grade choice": (["grade", "--set", "ch9", "--problem", "q2", "--answers", '{"b1": "A"}'], 1, "wrong_answer"),
    # An answer problem of the set whose code problems use the attention check library.
    "grade fill-in beside code": (["grade", "--set", "attention", "--problem", "q1", "--answers", "{}"], 1, "b1"),
    "problems show": (["problems", "show", "ch9"], 0, "## q1"),
    "problems show beside code": (["problems", "show", "attention", "q1"], 0, "## q1"),
}


@pytest.mark.parametrize("name", list(COMMANDS))
def test_command_imports_no_torch_no_sandbox(place: Place, name: str, tmp_path: Path) -> None:
    template, expected_exit, expected_text = COMMANDS[name]
    fields = {"offering_id": place.offering_id, "roster_csv": place.roster_csv, "url": place.url, "token": place.token}
    args = [str(fields[arg[1:-1]]) if arg[1:-1] in fields and arg[0] == "{" else arg for arg in template]
    code, heavy, output = run_light(place, args, tmp_path)
    assert code == expected_exit, output
    assert expected_text in output, output
    assert heavy == [], f"`autograder {name}` imported {heavy}"
