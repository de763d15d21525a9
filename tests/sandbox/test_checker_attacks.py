"""An instructor's own code (a set's checks) runs in the set's jailed checker, never in the service.

The test writes a small set whose ``checks/c1.py`` tries, one check per attempt, what a hostile instructor of
another offering would: read the service's secret key file and SQLite database, its environment through /proc,
connect to PostgreSQL and Redis on 127.0.0.1, write outside its own folder, import ``app``, signal the service, and
kill its own process. A check *passes* only when its attempt succeeded (it returns what it got), so the reference
solution scores full marks only if every attempt worked: here each must fail, and the gate must report the set's
failure (the solution lost those points) rather than crash. Run with ``mode="unsafe-local"`` (no jail) these checks
pass: that is what the jail is tested against (``test_without_the_jail_the_attempts_succeed``).
"""

from __future__ import annotations

import os
import socket
import sqlite3
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graders.code.runner import CodeGrader
from graders.grade import grade_submission, validate_set
from graders.problemset.loader import load_problem_set
from graders.problemset.validate import ValidationReport
from tests.sandbox import support

ATTACKS = {
    "reads_secret_key": "return open(SECRET_FILE).read()",
    "reads_sqlite": "return repr(open(DB_FILE, 'rb').read(64))",
    "reads_service_environ": "return open(f'/proc/{SERVICE_PID}/environ', 'rb').read().decode(errors='replace')",
    "own_environment_has_secret": "assert SECRET in repr(dict(os.environ)), 'no secret here'\nreturn 'found'",
    "connects_postgres": "socket.create_connection(('127.0.0.1', 5432), timeout=3).close()\nreturn 'connected'",
    "connects_redis": "socket.create_connection(('127.0.0.1', 6379), timeout=3).close()\nreturn 'connected'",
    "writes_outside": "open(OUTSIDE, 'w').write('escaped')\nreturn 'wrote'",
    "writes_into_the_set": "open(__file__ + '.planted', 'w').write('x')\nreturn 'wrote'",
    "imports_app": "import app.config\nreturn 'imported'",
    "signals_the_service": "os.kill(SERVICE_PID, signal.SIGWINCH)\nreturn 'signalled'",
    "signals_its_parent": "os.kill(os.getppid(), signal.SIGWINCH)\nreturn 'signalled'",
    "kills_itself": "os.kill(os.getpid(), signal.SIGKILL)\nreturn 'survived'",
    # Refused by the checker's own limits: its address space (RLIMIT_AS) and its seccomp filter.
    "allocates_8_gib": "block = bytes(8 << 30)\nreturn f'allocated {len(block)}'",
    "forks": "pid = os.fork()\nif pid == 0:\n    os._exit(0)\nos.waitpid(pid, 0)\nreturn 'forked'",
    # Last: a new user namespace changes what the same checker's later attempts could reach.
    "unshares_a_user_namespace": "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "assert libc.unshare(0x10000000) == 0, f'unshare: errno {ctypes.get_errno()}'\nreturn 'unshared'",
}

SET_YAML = """
id: hostile
title: A hostile instructor's set
problems:
  - id: c1
    title: Add
    kind: code
    prompt: prompts/c1.md
    entrypoints: [add]
    checks: checks/c1.py
    limits: {time_s: 10, memory_mb: 1024, source_kb: 20}
"""


# A set whose attacks fire at grading time only: under the upload gate (its reference solution and mutants) each
# check returns quietly and the set passes the gate honestly, as a hostile instructor's would; a student file whose
# add(0, 0) answers ARMED sets them off in the worker or the trial regrade that grades it. ``adds`` is its one
# honest check (the mutant fails it), so an armed student's full marks would be 1 plus one point per attack.
ARMED = "def add(a, b):\n    return 'ARMED' if (a, b) == (0, 0) else a + b\n"
_QUIET = "if student.call('add', 0, 0) != 'ARMED':\n    return 'quiet'\n"
_ADDS = '\n\n@check(points=1, category="reference_example", visibility="visible")\ndef adds(student):\n'
_ADDS += "    assert student.call('add', 2, 3) == 5, 'add(2, 3) is not 5'\n"


def _checks_source(constants: dict[str, Any], *, armed_only: bool = False, extra: dict[str, str] | None = None) -> str:
    head = "import os, signal, socket\n\nfrom graders.code.checks import check\n\n"
    head += "".join(f"{name} = {value!r}\n" for name, value in constants.items())
    body = _ADDS if armed_only else ""
    for name, attempt in {**ATTACKS, **(extra or {})}.items():
        body += f'\n\n@check(points=1, category="shape", visibility="visible")\ndef {name}(student):\n'
        body += textwrap.indent((_QUIET if armed_only else "") + attempt, "    ") + "\n"
    return head + body


def _write_set(
    root: Path, constants: dict[str, Any], *, armed_only: bool = False, extra: dict[str, str] | None = None
) -> Path:
    """The hostile set in ``root``. ``armed_only``: its attacks wait for an armed student file (see ARMED), so the
    set passes the gate; ``extra``: more attempts (name: body) beside ATTACKS."""
    for folder in ("checks", "prompts", "solutions/c1", "mutants/c1"):
        (root / folder).mkdir(parents=True, exist_ok=True)
    (root / "problemset.yaml").write_text(SET_YAML)
    (root / "prompts" / "c1.md").write_text("# c1\nWrite `add(a, b)`.\n")
    (root / "checks" / "c1.py").write_text(_checks_source(constants, armed_only=armed_only, extra=extra))
    (root / "solutions" / "c1" / "good.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "mutants" / "c1" / "bad.py").write_text("def add(a, b):\n    return a - b\n")
    return root


@pytest.fixture(scope="module")
def service_files(data_dir: Path, secret: str) -> dict[str, Any]:
    """The service's secrets as the data dir holds them: a key file and a real SQLite database."""
    key = data_dir / "secret_key"
    key.write_text(secret)
    key.chmod(0o600)
    db = data_dir / "attack.db"
    with sqlite3.connect(db) as conn:
        conn.execute("create table if not exists tokens (hash text)")
        conn.execute("insert into tokens values (?)", (secret,))
    return {
        "SECRET": secret,
        "SECRET_FILE": str(key),
        "DB_FILE": str(db),
        "SERVICE_PID": os.getpid(),
        "OUTSIDE": str(data_dir.parent / "escaped.txt"),
    }


def _gate(grader: CodeGrader, root: Path) -> ValidationReport:
    return validate_set(load_problem_set(root), code_grader=grader, max_grading_s=600)


@pytest.fixture(scope="module")
def gate(grader: CodeGrader, service_files: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = _write_set(tmp_path_factory.mktemp("hostile"), service_files)
    return _gate(grader, root), root


def _cell(report: ValidationReport, check: str) -> dict[str, Any]:
    solution = next(f for f in report.gates["c1"]["files"] if f["kind"] == "solution")
    return solution["checks"][check]


def _listening(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except OSError:
        return False
    return True


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_each_attempt_fails_and_the_gate_reports_the_set(gate: Any, service_files: dict[str, Any], attack: str) -> None:
    report, root = gate
    if attack in ("connects_postgres", "connects_redis") and not _listening(5432 if "postgres" in attack else 6379):
        pytest.skip("nothing listens there on this machine, so the attempt proves nothing")
    cell = _cell(report, attack)
    assert not cell["passed"] and cell["score"] == 0, (attack, cell)
    assert not report.ok  # the set's own failure: its reference solution lost the points of its checks
    assert any("reference solution scored" in e.message for e in report.errors), report.to_dict()
    assert not Path(service_files["OUTSIDE"]).exists()
    assert not list((root / "checks").glob("*.planted"))


def test_the_service_is_unharmed_and_grades_on(grader: CodeGrader, gate: Any) -> None:
    support.assert_healthy(grader)


def test_a_set_that_fails_to_import_is_the_sets_error(grader: CodeGrader, tmp_path: Path) -> None:
    root = _write_set(tmp_path / "broken", {})
    (root / "checks" / "c1.py").write_text("import os\nos.kill(os.getppid(), 9)\nraise SystemExit(3)\n")
    report = _gate(grader, root)
    assert not report.ok
    assert any("cannot import checks" in e.message for e in report.errors), report.to_dict()
    support.assert_healthy(grader)


@pytest.fixture
def unjailed(data_dir: Path) -> Iterator[CodeGrader]:
    from graders.sandbox.config import SandboxConfig

    with CodeGrader(SandboxConfig(mode="unsafe-local", dev_mode=True, prefork=0)) as g:
        yield g


def test_without_the_jail_the_attempts_succeed(
    unjailed: CodeGrader, service_files: dict[str, Any], tmp_path: Path
) -> None:
    """The test can fail: with no jail around the checker, the same checks read, write and import."""
    report = _gate(unjailed, _write_set(tmp_path / "hostile", {**service_files, "OUTSIDE": str(tmp_path / "out")}))
    for attack in ("reads_secret_key", "reads_sqlite", "writes_outside", "writes_into_the_set", "imports_app",
                   "forks", "unshares_a_user_namespace"):  # fmt: skip
        assert _cell(report, attack)["passed"], attack


def test_grading_a_submission_runs_the_checks_in_the_checker(grader: CodeGrader, gate: Any) -> None:
    """The workers' path (graders.grade.grade_submission, as app/worker/grading.py calls it): the same attempts,
    made while a student's submission is graded, fail the same way, and the grading still completes."""
    _, root = gate
    result = grade_submission(
        load_problem_set(root), "c1", {"code": "def add(a, b):\n    return a + b\n"}, lambda: grader
    )
    assert result.max_score == len(ATTACKS)
    assert result.score == 0, result.to_dict()
    assert all(not c.passed for c in result.checks), result.to_dict()
