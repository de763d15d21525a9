"""Engine and session factory; SQLite gets WAL and a busy timeout so the API and workers can share one file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, DateTime, MetaData, create_engine, event
from sqlalchemy.engine import Dialect, Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker
from sqlalchemy.types import TypeDecorator

from app.safe_text import scrub_surrogates

if TYPE_CHECKING:
    from app.config import Settings

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> datetime:
    return datetime.now(UTC)


def _sqlite_pragmas(busy_timeout_s: float) -> Callable[[Any, Any], None]:
    milliseconds = max(1, round(busy_timeout_s * 1000))

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={milliseconds}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return on_connect


def engine_for(settings: Settings) -> Engine:
    """The one way a process makes its engine from its settings, connect and statement timeouts included: `serve`,
    the workers (app.worker.runtime) and the CLI's commands that open the database (app.cli.common)."""
    return make_engine(
        settings.resolved_database_url,
        connect_timeout_s=settings.database_connect_timeout_s,
        statement_timeout_s=settings.database_statement_timeout_s,
        busy_timeout_s=settings.database_busy_timeout_s,
    )


def make_engine(
    url: str, *, connect_timeout_s: int = 10, statement_timeout_s: float = 0, busy_timeout_s: float = 10
) -> Engine:
    """The engine of ``url``. PostgreSQL: a connection not made within ``connect_timeout_s`` fails (a server that
    drops packets, or accepts and never answers, would otherwise hang the request for the kernel's minutes of TCP
    retries), and with ``statement_timeout_s`` the server cancels a longer statement (0: none). SQLite: a write waits
    ``busy_timeout_s`` for another connection's lock before it fails (a 503 with Retry-After). Processes make
    theirs with ``engine_for``; the migrations and the backup commands' short-lived inspections use this alone."""
    if url.startswith("sqlite"):
        # Enough connections for every request thread (anyio's 40) and the grading threads at once: a SQLite
        # connection costs little, and a request should wait for the database's lock, not for a free connection.
        engine = create_engine(
            url, connect_args={"check_same_thread": False, "timeout": busy_timeout_s}, pool_size=10, max_overflow=40
        )
        event.listen(engine, "connect", _sqlite_pragmas(busy_timeout_s))
        return engine
    # libpq's connect_timeout (whole seconds, at least 2) bounds the TCP connect and the startup exchange alike.
    engine = create_engine(
        url,
        pool_pre_ping=True,
        pool_size=10,
        max_overflow=10,
        connect_args={"connect_timeout": max(2, int(connect_timeout_s))},
    )
    if statement_timeout_s > 0:
        event.listen(engine, "connect", _statement_timeout(statement_timeout_s))
    return engine


def _statement_timeout(seconds: float) -> Callable[[Any, Any], None]:
    # A SET on each new pooled connection (not libpq's `options`, which a URL may carry already), committed so that
    # the pool's rollback on return keeps it.
    milliseconds = max(1, round(seconds * 1000))

    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute(f"SET statement_timeout = {milliseconds}")
        cursor.close()
        dbapi_connection.commit()

    return on_connect


# What a locked, busy or unreachable database says (SQLite, psycopg): a retry later will succeed.
_BUSY_MARKERS = (
    "database is locked",
    "database table is locked",
    "database is busy",
    "lock timeout",
    "could not obtain lock",
    "connection refused",
    "could not connect",
    "timeout expired",  # psycopg: connect_timeout passed (a blackholed server)
    "canceling statement due to statement timeout",
    "server closed the connection",
    "terminating connection",
    "the database system is starting up",
    "the database system is shutting down",
)


def database_unavailable(exc: BaseException) -> bool:
    """A locked, busy or unreachable database (the API answers 503; a worker waits and writes again), or no
    connection free in the pool within its timeout (every one busy: the service is overloaded)."""
    if isinstance(exc, PoolTimeout):
        return True
    if not isinstance(exc, OperationalError):
        return False
    text = str(exc.orig).lower()
    return any(marker in text for marker in _BUSY_MARKERS)


def disk_full(exc: BaseException) -> bool:
    """The database refusing a write because its disk is full (SQLite's SQLITE_FULL, PostgreSQL's SQLSTATE 53100)."""
    if not isinstance(exc, OperationalError):
        return False
    orig = exc.orig
    if getattr(orig, "sqlite_errorname", None) == "SQLITE_FULL":
        return True
    return getattr(orig, "sqlstate", None) == "53100" or "database or disk is full" in str(orig)


def exc_text(exc: BaseException) -> str:
    """The driver's message of a database error on one line, without SQLAlchemy's statement and link."""
    return " ".join(str(getattr(exc, "orig", None) or exc).split())


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A unit of work: commit on success, roll back on any error."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


class UTCDateTime(TypeDecorator[datetime]):
    """Timezone-aware UTC datetimes on every backend (SQLite drops the zone; this puts it back)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("naive datetime; use app.db.utcnow()")
        return value.astimezone(UTC) if value is not None else None

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is not None and value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value


# A lone surrogate cannot be encoded as UTF-8. The schemas (app.safe_text) refuse one in what a student sends and the
# sandbox's wire (graders.sandbox.wire) replaces one in what student code says; a text column never held one (both
# drivers refuse to write it), but JSON stores it escaped ("\\ud800"), so answers stored before the schemas
# refused it may hold one, and each page or API answer showing them was a 500.


class StudentJSON(TypeDecorator[Any]):
    """JSON a student wrote (a submission's answers or code): lone surrogates read back as U+FFFD."""

    impl = JSON
    cache_ok = True

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return scrub_surrogates(value)
