"""Migrations: upgrade head on an empty database, downgrade to base, on SQLite and PostgreSQL; models match."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

import app.models  # noqa: F401
from app.db import Base, make_engine
from app.migrate import downgrade, upgrade
from tests.conftest import fresh_postgres_database


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database(request, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.db'}"
        return
    with fresh_postgres_database("autograder_migr") as url:
        yield url


def tables(url: str) -> set[str]:
    engine = make_engine(url)
    try:
        return set(inspect(engine).get_table_names()) - {"alembic_version"}
    finally:
        engine.dispose()


def test_upgrade_then_downgrade(empty_database: str) -> None:
    upgrade(empty_database)
    assert tables(empty_database) == set(Base.metadata.tables)
    downgrade(empty_database, "base")
    assert tables(empty_database) == set()
    upgrade(empty_database)  # and back up again: downgrade left nothing behind
    assert tables(empty_database) == set(Base.metadata.tables)


def test_models_match_the_migrations(empty_database: str) -> None:
    upgrade(empty_database)
    engine = make_engine(empty_database)
    try:
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    finally:
        engine.dispose()
    assert diff == [], f"models and migrations differ; write a migration: {diff}"
