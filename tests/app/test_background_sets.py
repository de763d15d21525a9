"""`serve` answers while its problem sets are gated in the background (app.problemsets.set_loader).

The gate of the set here is slow on demand: its check waits until the test creates a file, so everything the test
does before creating it happens while the gate runs; no assertion depends on how long anything takes. The first
test starts a real `autograder serve`; the others run the app with its lifespan in a real uvicorn server in this
process, where the checking code's version can be stood in for an upgrade.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.courses import accounts
from app.db import make_engine, make_session_factory
from app.main import create_app
from app.migrate import upgrade
from app.problemsets import checking_code
from app.problemsets.models import ProblemSet, ProblemSetVersion
from app.users.models import Role
from app.worker.code_grader import LazyCodeGrader
from tests.app.fault_stack import Process, healthz, wait_until

PORTS = range(18600, 18700)  # this suite's own ports on a shared machine
CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')
SLOW = "slow"
CHECKS = '''"""Checks of d1. The first waits for a file the test creates: until then the gate of this set cannot end."""

import time
from pathlib import Path

from graders.code.checks import CheckFailed, check

FLAG = Path({flag!r})


@check(points=1, category="reference_example", visibility="visible", timeout_s=300)
def doubles_two(student):
    """double(2) is 4."""
    while not FLAG.exists():
        time.sleep(0.05)
    got = student.call("double", 2)
    if got != 4:
        raise CheckFailed(f"double(2) returned {{got!r}}; expected 4")


@check(points=1, category="shape", visibility="hidden")
def doubles_zero(student):
    """double(0) is 0."""
    if student.call("double", 0) != 0:
        raise CheckFailed("double(0) is not 0")
'''


def write_slow_set(root: Path, flag: Path, *, mutant: str = "return x + 2", title: str = "Slow gate") -> Path:
    """A one-problem code set whose gate grades two files (a solution and a mutant), each waiting for ``flag``.
    The default mutant loses points; ``mutant="return 2 * x"`` is not caught, so its version is refused."""
    folder = root / SLOW
    for sub in ("prompts", "checks", "solutions/d1", "mutants/d1"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "problemset.yaml").write_text(
        f"id: {SLOW}\ntitle: {title}\nproblems:\n  - id: d1\n    title: Double\n    kind: code\n"
        "    prompt: prompts/d1.md\n    entrypoints: [double]\n    checks: checks/d1.py\n"
        "    limits: {time_s: 10, memory_mb: 1024, source_kb: 20}\n",
        encoding="utf-8",
    )
    (folder / "prompts" / "d1.md").write_text("# d1: write `double(x)`\n", encoding="utf-8")
    (folder / "checks" / "d1.py").write_text(CHECKS.format(flag=str(flag)), encoding="utf-8")
    (folder / "solutions" / "d1" / "plain.py").write_text("def double(x):\n    return 2 * x\n", encoding="utf-8")
    (folder / "mutants" / "d1" / "adds.py").write_text(f"def double(x):\n    {mutant}\n", encoding="utf-8")
    return folder


def own_port() -> int:
    for port in PORTS:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    pytest.skip(f"none of the ports {PORTS.start}-{PORTS.stop - 1} is free")


def make_student(sessions: sessionmaker[Session]) -> dict[str, str]:
    with sessions() as session:
        user, _ = accounts.create_user(session, email="student@example.com", role=Role.STUDENT)
        _, token = accounts.create_token(session, user=user, name="bg")
        session.commit()
    return {"Authorization": f"Bearer {token}"}


def offered(base: str, headers: dict[str, str]) -> dict[str, int]:
    """The sets the student is offered: id -> version number."""
    resp = httpx.get(f"{base}/api/v1/problem-sets", headers=headers, timeout=30)
    assert resp.status_code == 200, resp.text
    return {item["id"]: item["version"] for item in resp.json()}


def state(base: str) -> str:
    return str(healthz(base)["sets"].get(SLOW, ""))


def wait_state(base: str, ready: Callable[[str], bool], what: str, bound_s: float = 300) -> str:
    """Poll the set's state until ``ready``; fails at once if it settles on another (a refusal, say)."""
    seen: list[str] = []

    def check() -> bool:
        seen.append(state(base))
        if ready(seen[-1]):
            return True
        if seen[-1] and "queued" not in seen[-1] and "checking" not in seen[-1]:
            pytest.fail(f"{what}: the set settled as {seen[-1]!r}")
        return False

    wait_until(what, check, bound_s=bound_s)
    return seen[-1]


@pytest.mark.slow
def test_serve_answers_while_the_gate_runs_and_offers_the_set_once_it_passed(tmp_path: Path) -> None:
    pytest.importorskip("graders.code.runner")
    flag = tmp_path / "gate-may-finish"
    problems, data_dir = tmp_path / "problems", tmp_path / "data"
    write_slow_set(problems, flag)
    data_dir.mkdir()
    database_url = f"sqlite:///{data_dir / 'autograder.db'}"
    upgrade(database_url)
    engine = make_engine(database_url)
    headers = make_student(make_session_factory(engine))
    env = {
        "AUTOGRADER_DATA_DIR": str(data_dir),
        "AUTOGRADER_SECRET_KEY": "k" * 40,
        "AUTOGRADER_PROBLEMS_DIR": str(problems),
        # The gate's sandbox: this test is about when the port opens, not about the jail (tests/sandbox).
        "AUTOGRADER_SANDBOX": "unsafe-local",
        "AUTOGRADER_DEV_MODE": "true",
        "AUTOGRADER_WORKERS": "1",
    }
    port = own_port()
    base = f"http://127.0.0.1:{port}"
    serve = Process(["serve", "--port", str(port)], env, tmp_path / "serve.log")
    try:
        wait_state(base, lambda s: s.startswith("checking"), "the gate of the slow set runs")
        # The gate cannot end before the flag exists: all of this is answered while it runs.
        assert httpx.get(f"{base}/login", timeout=30).status_code == 200
        assert SLOW not in offered(base, headers)
        assert httpx.get(f"{base}/api/v1/problem-sets/{SLOW}", headers=headers, timeout=30).status_code == 404
        assert state(base).startswith("checking")
        log = serve.text()
        # The first start says where the server is before it gates anything.
        assert "serving on http://127.0.0.1:" in log
        assert log.index("serving on http://127.0.0.1:") < log.index(f"{SLOW}: checking a new version")
        flag.touch()
        wait_state(base, lambda s: s == "live", "the slow set is live")
        assert offered(base, headers) == {SLOW: 1}
        assert httpx.get(f"{base}/api/v1/problem-sets/{SLOW}", headers=headers, timeout=30).status_code == 200
    finally:
        flag.touch()
        serve.stop()
        engine.dispose()


# --- in this process: the app's lifespan in a real uvicorn server ------------------------------------------------


@pytest.fixture
def bg_settings(tmp_path: Path) -> Settings:
    database_url = f"sqlite:///{tmp_path / 'autograder.db'}"
    upgrade(database_url)
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        secret_key="test-secret-" + "x" * 32,
        workers=1,
        problems_dir=tmp_path / "problems",
        load_problems_on_start=True,
        prewarm_sandbox=False,
        sandbox="unsafe-local",
        dev_mode=True,
    )


@pytest.fixture
def bg_sessions(bg_settings: Settings) -> Iterator[sessionmaker[Session]]:
    engine = make_engine(bg_settings.resolved_database_url)
    yield make_session_factory(engine)
    engine.dispose()


@contextlib.contextmanager
def running(settings: Settings, flag: Path) -> Iterator[tuple[str, FastAPI]]:
    """The app as `serve` builds it, in a uvicorn server on one of this suite's ports; stopped on leaving (the flag
    is created first, so that a gate still waiting cannot hold the shutdown)."""
    pytest.importorskip("graders.code.runner")
    app = create_app(settings, code_grader=LazyCodeGrader(settings), load_sets=True)
    port = own_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="on"))
    thread = threading.Thread(target=server.run, name="test-uvicorn", daemon=True)
    thread.start()
    try:
        wait_until("uvicorn serves", lambda: server.started, bound_s=60)
        yield f"http://127.0.0.1:{port}", app
    finally:
        flag.touch()
        server.should_exit = True
        thread.join(60)


def latest(sessions: sessionmaker[Session]) -> ProblemSetVersion:
    with sessions() as session:
        version = session.scalars(
            select(ProblemSetVersion)
            .join(ProblemSet)
            .where(ProblemSet.slug == SLOW)
            .order_by(ProblemSetVersion.number.desc())
        ).first()
        assert version is not None
        session.expunge(version)
        return version


def first_live(settings: Settings, sessions: sessionmaker[Session], flag: Path) -> dict[str, str]:
    """Start once with the flag present: the set passes its gate and version 1 is live. Returns a student."""
    headers = make_student(sessions)
    flag.touch()
    with running(settings, flag) as (base, _):
        wait_state(base, lambda s: s == "live", "version 1 is live")
        assert offered(base, headers) == {SLOW: 1}
    flag.unlink()
    return headers


@pytest.mark.slow
def test_a_new_checking_code_regates_the_live_version_in_the_background(
    bg_settings: Settings, bg_sessions: sessionmaker[Session], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag = tmp_path / "gate-may-finish"
    write_slow_set(bg_settings.problems_dir, flag)
    headers = first_live(bg_settings, bg_sessions, flag)
    first = latest(bg_sessions)
    assert first.checked_with == checking_code.checking_code_version(code=True)

    # A restart with the same set and the same checking code gates nothing: the flag is gone, so a gate would wait.
    with running(bg_settings, flag) as (base, app):
        wait_until("the loader is done", lambda: app.state.set_loader.settled, bound_s=120)
        assert state(base) == "live"
    assert latest(bg_sessions).checked_with == first.checked_with
    flag.unlink()

    # An upgrade of the checking code (stood in: its version is all the loader sees of it).
    upgraded = "upgraded-" + first.checked_with
    monkeypatch.setattr(checking_code, "checking_code_version", lambda *, code: upgraded)
    with running(bg_settings, flag) as (base, app):
        wait_state(base, lambda s: s.startswith("live; re-checking"), "the live version is checked again")
        # The gate waits for the flag: meanwhile version 1 stays offered, with its old key.
        assert offered(base, headers) == {SLOW: 1}
        assert httpx.get(f"{base}/api/v1/problem-sets/{SLOW}", headers=headers, timeout=30).status_code == 200
        assert latest(bg_sessions).checked_with == first.checked_with
        flag.touch()
        wait_state(base, lambda s: s == "live", "the re-check passed")
        assert offered(base, headers) == {SLOW: 1}
    after = latest(bg_sessions)
    assert (after.number, after.content_hash, after.checked_with) == (1, first.content_hash, upgraded)


@pytest.mark.slow
def test_a_refused_new_version_leaves_the_live_one_live(
    bg_settings: Settings, bg_sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    flag = tmp_path / "gate-may-finish"
    write_slow_set(bg_settings.problems_dir, flag)
    headers = first_live(bg_settings, bg_sessions, flag)
    # The new version's mutant computes the right answer: not caught, so the gate refuses the version.
    write_slow_set(bg_settings.problems_dir, flag, mutant="return 2 * x", title="Slow gate, version 2")
    instructor, password = _instructor(bg_sessions)
    with running(bg_settings, flag) as (base, _):
        wait_state(base, lambda s: s.startswith("live; checking a new version"), "the new version is checked")
        assert offered(base, headers) == {SLOW: 1}
        flag.touch()
        wait_state(base, lambda s: "the new version was refused" in s, "the new version is refused")
        assert state(base).startswith("live; ")
        assert offered(base, headers) == {SLOW: 1}
        assert httpx.get(f"{base}/api/v1/problem-sets/{SLOW}", headers=headers, timeout=30).status_code == 200
        # The instructors see why, with the gate's report; the public /healthz does not name the mutant.
        assert "adds.py" not in state(base)
        page = _instructor_page(base, instructor, password)
        assert "the new version was refused" in page and "mutant not caught" in page and "adds.py" in page
    assert latest(bg_sessions).number == 1


def _instructor(sessions: sessionmaker[Session]) -> tuple[str, str]:
    with sessions() as session:
        user, password = accounts.create_user(session, email="teacher@example.com", role=Role.INSTRUCTOR)
        session.commit()
        return user.email, password


def _instructor_page(base: str, email: str, password: str) -> str:
    with httpx.Client(base_url=base, timeout=30) as http:
        match = CSRF.search(http.get("/login").text)
        assert match, "no CSRF token on the login page"
        token = match.group(1)
        resp = http.post("/login", data={"email": email, "password": password, "csrf_token": token},
                         follow_redirects=False)  # fmt: skip
        assert resp.status_code == 303, resp.text
        page = http.get("/instructor")
        assert page.status_code == 200, page.text
        return page.text
