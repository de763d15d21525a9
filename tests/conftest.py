"""Shared fixtures: settings on a temp data dir, a migrated database (SQLite file or the real PostgreSQL),
an app with embedded workers, users, and logged-in clients.

The database fixture is parametrised over both backends. The PostgreSQL half skips when the server is missing,
except in CI (AUTOGRADER_TEST_REQUIRE_SERVICES=1), where it fails. Keep that twin where the backends can differ
(constraints, types, locking, case, migrations, what the database stores); a test of access checks or of input
refused before anything is stored runs on SQLite only (``parametrize("database_url", ["sqlite"], indirect=True)``
with a comment saying why).

A module marked ``pytestmark = pytest.mark.shared_app`` has one app per backend for all its tests, the rows deleted
before each (see _SharedApps for what such a module must not do); a test marked ``shared_app(False)`` opts out.
Mark every new module of API or page tests that can share: building the app is most of such a test's set-up,
and a shared module spends about half the CPU time of the same tests each with its own app.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import MetaData, create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import NullPool

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
    """A fresh PostgreSQL database for this test session, migrated to head, dropped at the end.

    Its commits do not wait for the disk (synchronous_commit off, this database only): nothing a test observes
    changes, short of the server crashing, and the hundreds of set-ups' commits stop costing a WAL flush each.
    """
    with fresh_postgres_database("autograder_test") as url:
        upgrade(url)
        engine = create_engine(url, isolation_level="AUTOCOMMIT")
        with engine.connect() as conn:
            conn.execute(text(f'ALTER DATABASE "{make_url(url).database}" SET synchronous_commit = off'))
        engine.dispose()
        yield url


class _Emptier:
    """Empties a migrated database for the next test: every table's rows (the migrations seed none but Alembic's
    own) and the id counters, so ids start at 1 again. Rows are deleted child tables first, in one transaction:
    on tables this small that costs milliseconds, where PostgreSQL's TRUNCATE of 28 tables cost about a second
    (it makes new files for each). The tables are read from the database itself, so a new migration's table is
    emptied too."""

    def __init__(self, url: str) -> None:
        self.engine = create_engine(url, poolclass=NullPool)
        metadata = MetaData()
        metadata.reflect(self.engine)
        self.tables = [t for t in reversed(metadata.sorted_tables) if t.name != "alembic_version"]
        self.postgres = self.engine.dialect.name == "postgresql"
        with self.engine.connect() as conn:
            if self.postgres:
                query = "SELECT oid::regclass::text FROM pg_class WHERE relkind = 'S'"
                self.sequences = list(conn.scalars(text(query)))
            else:
                self.sequences = []
                self.sqlite_sequence = bool(
                    conn.scalar(text("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_sequence'"))
                )

    def empty(self) -> None:
        with self.engine.begin() as conn:
            for table in self.tables:
                conn.execute(table.delete())
            for sequence in self.sequences:
                conn.execute(text("SELECT setval(CAST(:s AS regclass), 1, false)"), {"s": sequence})
            if not self.postgres and self.sqlite_sequence:
                conn.execute(text("DELETE FROM sqlite_sequence"))


_emptiers: dict[str, _Emptier] = {}


def empty_database(url: str) -> None:
    """Delete every row of a migrated database (see _Emptier); its structure is read once per URL."""
    if url not in _emptiers:
        _emptiers[url] = _Emptier(url)
    _emptiers[url].empty()


def _truncate_postgres(url: str) -> None:  # the name the Celery test imports
    empty_database(url)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file, copied for each test (migrating every time would dominate the suite)."""
    path = tmp_path_factory.mktemp("template") / "template.db"
    upgrade(f"sqlite:///{path}")
    return path


# For a test that picks its backends (``parametrize("database_url", ..., indirect=True)``): both of them.
BOTH_DATABASES = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def shares_app(request: pytest.FixtureRequest) -> bool:
    """Whether the test's module is marked ``shared_app``: one app per module and backend (see _SharedApps); a test
    marked ``shared_app(False)`` there has its own app and database, as elsewhere."""
    marker = request.node.get_closest_marker("shared_app")
    return marker is not None and (not marker.args or bool(marker.args[0]))


class _SharedApps:
    """For a module marked ``pytest.mark.shared_app``: per backend one database, one Settings (one data dir) and
    one running app with its TestClient, for all the module's tests, instead of one of each per test.

    Building the app (about 200 routes' dependants, most of it in its first request) costs a second or two; a
    module of many short tests spends most of its time there. Before each test the database is emptied
    (empty_database) and the client's cookies are dropped, so each test still starts from no rows and no login.
    What is not reset: the app's memory (background jobs of the pages, the running workers) and the data dir. So
    mark only a module whose tests do not change the app's state or settings, do not leave work running past
    their end, and do not rely on an empty data dir.
    """

    def __init__(self, root: Path, sqlite_template: Path) -> None:
        self.root = root
        self.sqlite_template = sqlite_template
        self.urls: dict[str, str] = {}
        self.settings: dict[str, Settings] = {}
        self.clients: dict[str, Any] = {}

    def url(self, backend: str, request: pytest.FixtureRequest) -> str:
        if backend not in self.urls:
            if backend == "sqlite":
                path = self.root / "shared.db"
                path.write_bytes(self.sqlite_template.read_bytes())
                self.urls[backend] = f"sqlite:///{path}"
            else:
                self.urls[backend] = request.getfixturevalue("postgres_database")
        return self.urls[backend]

    def backend_of(self, url: str) -> str:
        return next(backend for backend, known in self.urls.items() if known == url)

    def close(self) -> None:
        """Stop the apps (the next test that shares one builds it again)."""
        for client in self.clients.values():
            client.__exit__(None, None, None)
        self.clients.clear()


@pytest.fixture(scope="module")
def shared_apps(tmp_path_factory: pytest.TempPathFactory, sqlite_template: Path) -> Iterator[_SharedApps]:
    apps = _SharedApps(tmp_path_factory.mktemp("shared"), sqlite_template)
    yield apps
    apps.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> Iterator[str]:
    if shares_app(request):
        url = request.getfixturevalue("shared_apps").url(request.param, request)
        empty_database(url)
        yield url
        return
    if request.node.get_closest_marker("shared_app") is not None:
        # Opted out in a shared module: the shared apps' workers must not take this test's jobs (on PostgreSQL
        # they share the database), so they stop first.
        request.getfixturevalue("shared_apps").close()
    if request.param == "sqlite":
        path = tmp_path / "autograder.db"
        path.write_bytes(sqlite_template.read_bytes())
        yield f"sqlite:///{path}"
        return
    url = request.getfixturevalue("postgres_database")
    empty_database(url)
    yield url


def _settings(data_dir: Path, database_url: str) -> Settings:
    return Settings(
        data_dir=data_dir,
        database_url=database_url,
        secret_key="test-secret-" + "x" * 32,
        workers=1,
        problems_dir=FIXTURE_SETS,
        load_problems_on_start=False,
        # Most API tests grade answers only; the few code tests start the sandbox on first use.
        prewarm_sandbox=False,
    )


@pytest.fixture
def settings(request: pytest.FixtureRequest, tmp_path: Path, database_url: str) -> Settings:
    if shares_app(request):
        shared = request.getfixturevalue("shared_apps")
        backend = shared.backend_of(database_url)
        if backend not in shared.settings:
            shared.settings[backend] = _settings(shared.root / f"data-{backend}", database_url)
        return shared.settings[backend]  # type: ignore[no-any-return]
    return _settings(tmp_path / "data", database_url)


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
