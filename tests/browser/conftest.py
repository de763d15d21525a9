"""Browser tests: a real `autograder serve` on 127.0.0.1 and Debian's Chromium driven by Playwright.

One server per test session, on a fresh SQLite database in a temp folder, with the shipped sets (ch9, attention)
loaded at start the way an instructor's `serve` loads them. Playwright's own browser download cannot work offline,
so it drives the system's chromium (`apt-get install chromium`; `.ci/run` and `make test` install it as root).
Where chromium or Playwright is missing the tests skip with that message, except in CI
(AUTOGRADER_TEST_REQUIRE_SERVICES=1), where they fail.

Every step leaves a screenshot in build/browser-screenshots/ (git-ignored; CI keeps it as an artefact), and
``check_a11y`` runs the vendored axe-core on the page: no serious or critical WCAG 2.1 A/AA violation.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, REQUIRE_SERVICES

AXE = REPO / "tests" / "browser" / "vendor" / "axe-core" / "axe.min.js"
SHOTS = REPO / "build" / "browser-screenshots"
PASSWORD = "browser-test-password"
SETS = ("ch9", "attention")
BROKEN = "broken-demo"  # a folder of the problems directory that serve refuses
START_TIMEOUT_S = 600  # loading the attention set runs its mutant gate in the sandbox before the server listens


def _missing(message: str) -> None:
    if REQUIRE_SERVICES:
        pytest.fail(message + " (required in CI: .ci/run installs chromium)")
    pytest.skip(message)


def chromium_path() -> str:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    _missing("browser tests need Debian's chromium: apt-get install chromium")
    raise AssertionError  # unreachable


@dataclass(frozen=True)
class Server:
    url: str
    data_dir: Path
    database_url: str
    log: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _create_accounts(database_url: str) -> None:
    from app.courses.accounts import create_user
    from app.db import make_engine, make_session_factory
    from app.migrate import upgrade
    from app.users.models import Role

    upgrade(database_url)
    engine = make_engine(database_url)
    with make_session_factory(engine)() as session:
        create_user(session, email="student@example.com", role=Role.STUDENT, password=PASSWORD, display_name="Mei Lin")
        create_user(session, email="bob@example.com", role=Role.STUDENT, password=PASSWORD, display_name="Bob Ray")
        # Only the courses walk puts dana in its second offering: the other tests' students stay in one offering.
        create_user(session, email="dana@example.com", role=Role.STUDENT, password=PASSWORD, display_name="Dana Wu")
        create_user(session, email="teacher@example.com", role=Role.INSTRUCTOR, password=PASSWORD)
        create_user(session, email="admin@example.com", role=Role.ADMIN, password=PASSWORD)  # creates courses
        # Changes its password in the account walk: in no offering, so no other test meets it.
        create_user(session, email="pat@example.com", role=Role.STUDENT, password=PASSWORD, enroll_default=False)
        session.commit()
    engine.dispose()


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """`autograder serve` on a free port with the shipped sets; its log is printed if it fails to start.

    AUTOGRADER_TEST_BROWSER_ROOT=<folder> keeps the server's folder there and reuses a server already running
    from it (its port in <folder>/port): the start takes minutes (the attention set's mutant gate), so a developer
    iterating on templates starts it once. A fresh folder gets a fresh database either way.
    """
    chromium_path()  # skip (or fail in CI) before the slow start when there is no browser
    kept = os.environ.get("AUTOGRADER_TEST_BROWSER_ROOT")
    if kept and (Path(kept) / "port").exists():
        root = Path(kept)
        url = f"http://127.0.0.1:{(root / 'port').read_text().strip()}"
        yield Server(url=url, data_dir=root / "data", database_url=f"sqlite:///{root / 'autograder.db'}",
                     log=root / "serve.log")  # fmt: skip
        return
    root = Path(kept) if kept else tmp_path_factory.mktemp("browser-server")
    root.mkdir(parents=True, exist_ok=True)
    problems = root / "problems"
    problems.mkdir()
    for name in SETS:
        (problems / name).symlink_to(REPO / "problems" / name, target_is_directory=True)
    # A set serve refuses at start-up (its prompt is missing): the instructor page must show it with its report.
    (problems / BROKEN).mkdir()
    (problems / BROKEN / "problemset.yaml").write_text(
        f"id: {BROKEN}\ntitle: A set whose prompt is missing\nproblems:\n  - id: q1\n    kind: manual\n    title: Why\n"
        "    prompt: prompts/q1.md\n    rubric: [{id: r1, points: 1, description: says why}]\n",
        encoding="utf-8",
    )
    database_url = f"sqlite:///{root / 'autograder.db'}"
    _create_accounts(database_url)
    port = _free_port()
    env = {
        **os.environ,
        "AUTOGRADER_DATA_DIR": str(root / "data"),
        "AUTOGRADER_DATABASE_URL": database_url,
        "AUTOGRADER_SECRET_KEY": "browser-test-secret-" + "x" * 32,
        "AUTOGRADER_PROBLEMS_DIR": str(problems),
        "AUTOGRADER_WORKERS": "1",
        "AUTOGRADER_WEBHOOK_ALLOW_PRIVATE": "true",  # the webhooks page registers a receiver on 127.0.0.1
        "AUTOGRADER_PUBLIC_URL": f"http://127.0.0.1:{port}",  # the LTI URLs the test LMS checks and posts to
        # Each test logs in afresh, the student more than the 10 times per 5 minutes one account may, and all of
        # them from 127.0.0.1 more than the 50 an address may on a quiet machine (the login limits are tested in
        # tests/app and tests/ops); a burst of logins is not the point here.
        "AUTOGRADER_RATE_LOGINS_PER_ACCOUNT": "0",
        "AUTOGRADER_RATE_LOGINS_PER_ADDRESS": "0",
    }
    log = root / "serve.log"
    cli = Path(sys.executable).with_name("autograder")
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(cli), "serve", "--host", "127.0.0.1", "--port", str(port)], env=env, stdout=out, stderr=out
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(url, proc, log)
        if kept:
            (root / "port").write_text(str(port))  # left running for the next session
        yield Server(url=url, data_dir=root / "data", database_url=database_url, log=log)
    finally:
        if not kept:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"autograder serve exited with {proc.returncode}:\n{log.read_text()[-4000:]}")
        try:
            with urllib.request.urlopen(url + "/healthz", timeout=2) as resp:
                # The sets load in the background once the port is open: ready when none is queued or checked.
                states = json.loads(resp.read()).get("sets", {}).values()
                if resp.status == 200 and not any("queued" in s or "checking" in s for s in states):
                    return
        except OSError:
            pass
        time.sleep(0.1)  # a /healthz read is cheap; a 0.5 s step kept every test session waiting up to that longer
    raise AssertionError(f"autograder serve did not answer within {START_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")


@pytest.fixture(scope="session")
def browser(server: Server) -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("browser tests need Playwright for Python: pip install -c constraints.txt -e '.[dev]'")
    with sync_playwright() as pw:
        # --no-sandbox: CI runs as root, where Chromium's own sandbox refuses to start.
        browser = pw.chromium.launch(executable_path=chromium_path(), args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def new_page(browser: Any, server: Server) -> Iterator[Any]:
    """A function opening a fresh context (own cookies) at a viewport; all are closed after the test."""
    contexts = []

    def make(width: int = 1200, height: int = 900, **options: Any) -> Any:
        context = browser.new_context(viewport={"width": width, "height": height}, base_url=server.url, **options)
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


def log_in(page: Any, email: str) -> None:
    page.goto("/login")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url(re.compile(r".*/$"))


def shot(page: Any, name: str) -> Path:
    """A full-page screenshot, kept in build/browser-screenshots/ (git-ignored)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def shot_of(locator: Any, name: str) -> Path:
    """A screenshot of one element (docs/pages.md's pictures are taken this way, then copied to docs/screenshots/)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    path = SHOTS / f"{name}.png"
    locator.screenshot(path=str(path))
    return path


def check_a11y(page: Any, name: str) -> list[dict[str, Any]]:
    """Run axe-core (vendored, no network) on the page; fail on serious or critical WCAG 2.1 A/AA violations."""
    if not page.evaluate("() => typeof window.axe !== 'undefined'"):
        # Evaluated, not added as a <script> tag: the pages' policy (script-src 'self') refuses an inline script,
        # and DevTools' evaluation is not a page script (the test's tool, not the page, runs it).
        page.evaluate(AXE.read_text() + "\n;undefined")
    result = page.evaluate(
        """async () => {
            const tags = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'];
            const r = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
            return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
                                          nodes: v.nodes.slice(0, 5).map(n => n.target.join(' '))}));
        }"""
    )
    SHOTS.mkdir(parents=True, exist_ok=True)
    (SHOTS / f"{name}.axe.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    bad = [v for v in result if v["impact"] in ("serious", "critical")]
    assert not bad, f"axe-core on {name}: " + json.dumps(bad, indent=1, ensure_ascii=False)
    return result
