"""Shared fixtures: settings on a temp data dir, a migrated database (SQLite file or the real PostgreSQL),
an app with embedded workers, users, and logged-in clients.

The database fixture is parametrised over both backends. The PostgreSQL half skips when the server is missing,
except in CI (AUTOGRADER_TEST_REQUIRE_SERVICES=1), where it fails.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from app.config import Settings
from app.db import make_engine, make_session_factory
from app.migrate import upgrade
from app.security import use_test_hash_parameters

REPO = Path(__file__).resolve().parent.parent
FIXTURE_SETS = REPO / "tests" / "fixtures" / "sets"
POSTGRES_ADMIN_URL = os.environ.get("AUTOGRADER_TEST_POSTGRES_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test")
# Parallel runs (pytest-xdist, `-n 2`) give each worker its own Redis database, counting down from 15: tests flush
# theirs, and one worker's flush must not lose another's queued jobs.
_XDIST_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
REDIS_URL = os.environ.get("AUTOGRADER_TEST_REDIS_URL", f"redis://127.0.0.1:6379/{15 - _XDIST_WORKER}")
REQUIRE_SERVICES = os.environ.get("AUTOGRADER_TEST_REQUIRE_SERVICES") == "1"


def pytest_configure(config: pytest.Config) -> None:
    # Every API test's set-up hashes a few passwords: at production cost (app.security) that is most of the
    # set-up's CPU. tests/app/test_password_hashing.py checks the production parameters in a fresh interpreter.
    use_test_hash_parameters()


def service_missing(what: str, error: Exception) -> None:
    message = f"{what} is not reachable: {error}"
    if REQUIRE_SERVICES:
        pytest.fail(message + " (required in CI)")
    pytest.skip(message)


@contextmanager
def fresh_postgres_database(prefix: str) -> Iterator[str]:
    """Create an empty PostgreSQL database, yield its URL, drop it afterwards (fails in CI if unreachable)."""
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    try:
        admin = create_engine(POSTGRES_ADMIN_URL, isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    except Exception as exc:
        service_missing("PostgreSQL", exc)
    try:
        yield make_url(POSTGRES_ADMIN_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """A fresh PostgreSQL database for this test session, migrated to head, dropped at the end."""
    with fresh_postgres_database("autograder_test") as url:
        upgrade(url)
        yield url


def _truncate_postgres(url: str) -> None:
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                "TRUNCATE check_result, grade, submission, assignment_override, assignment, membership, offering, "
                'course, problem_set_version, problem_set, api_token, "user", '
                "rate_limit_counter, regrade_batch, webhook_attempt, webhook_delivery, webhook_endpoint, lti_passback, "
                "lti_resource_link, "
                "lti_context, lti_user, lti_deployment, lti_platform, lti_launch_state, lti_roster_sync, lti_lineitem, "
                "invitation, assignment_start "
                "RESTART IDENTITY CASCADE"
            )
        )
    engine.dispose()


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file, copied for each test (migrating every time would dominate the suite)."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


# For a test that picks its backends (``parametrize("database_url", ..., indirect=True)``): both of them.
BOTH_DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> Iterator[str]:
    if request.param == "sqlite":
        path = tmp_path / "autograder.db"
        path.write_bytes(sqlite_template.read_bytes())
        yield f"sqlite:///{path}"
        return
    url = request.getfixturevalue("postgres_database")
    _truncate_postgres(url)
    yield url


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(
        data_dir=tmp_path / "data",
        database_url=database_url,
        secret_key="test-secret-" + "x" * 32,
        workers=1,
        problems_dir=FIXTURE_SETS,
        load_problems_on_start=False,
        # Most API tests grade answers only; the few code tests start the sandbox on first use.
        prewarm_sandbox=False,
    )


@pytest.fixture
def sessions(settings: Settings):  # type: ignore[no-untyped-def]
    engine = make_engine(settings.resolved_database_url)
    yield make_session_factory(engine)
    engine.dispose()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """In a parallel run, send each module whole to one process, and all browser tests to the same one.

    A module's fixtures (servers, graded sets) then start once, and the browser tests share their one server and
    browser instead of starting a second pair (with its problem-set gate) in the other process.
    """
    from xdist.scheduler import LoadScopeScheduling

    class ByModule(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/browser" if path.startswith("tests/browser/") else path

    return ByModule(config, log)
