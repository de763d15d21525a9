"""Alembic environment: the URL comes from the caller's Config (app.migrate), never from a file."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

import app.models  # noqa: F401 - registers every table on Base.metadata
from app.db import Base, UTCDateTime, make_engine

config = context.config
target_metadata = Base.metadata


def render_item(type_: str, obj: object, autogen_context: object) -> str | bool:
    """Render app types as plain SQLAlchemy ones, so migration files never import the app."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def run_migrations_offline() -> None:
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        compare_type=True,
        render_as_batch=True,
        render_item=render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = config.get_main_option("sqlalchemy.url")
    assert url, "sqlalchemy.url is not set"
    engine = make_engine(url)
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            _run_without_cascades(conn)
        else:
            _run(conn)
    engine.dispose()


def _run_without_cascades(conn: Connection) -> None:
    """SQLite alters a table by copying it into a new one and dropping the old (batch mode): with the app's
    ``foreign_keys=ON`` that drop cascades, so a downgrade dropping a column of "user" deleted every membership.
    Alembic's advice: foreign keys off while migrating (a pragma SQLite ignores inside a transaction, hence before
    it), then a check that every reference still holds, so a migration cannot leave dangling rows behind."""
    conn.exec_driver_sql("PRAGMA foreign_keys=OFF")
    conn.commit()
    _run(conn)
    dangling = conn.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
    conn.exec_driver_sql("PRAGMA foreign_keys=ON")
    conn.commit()
    if dangling:
        raise RuntimeError(f"the migration left rows whose references are gone: {dangling[:5]}")


def _run(connection: Connection) -> None:
    # render_as_batch lets the same migrations ALTER tables on SQLite, which cannot alter in place.
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        compare_type=True,
        render_as_batch=True,
        render_item=render_item,
    )
    with context.begin_transaction():
        context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
