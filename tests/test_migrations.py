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


def test_a_sqlite_table_rebuild_cascades_into_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """SQLite drops a column by rebuilding the table: with foreign keys on, dropping the old "user" table deleted
    every row that references it (memberships, tokens). Migrations run with them off and check them after."""
    from sqlalchemy import text

    url = f"sqlite:///{tmp_path / 'r.db'}"
    upgrade(url)
    engine = make_engine(url)
    with engine.begin() as conn:
        conn.execute(
            text(
                'INSERT INTO "user" (id, email, display_name, role, password_hash, is_active, created_at) '
                "VALUES (7, 'u@x.org', '', 'user', 'h', true, CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO api_token (user_id, name, prefix, token_hash, scopes, created_at) "
                "VALUES (7, 't', 'agt_', 'x', '[]', CURRENT_TIMESTAMP)"
            )
        )
    engine.dispose()
    downgrade(url, "d2a4c6e8f0b1")  # the step before user.locale: "user" is rebuilt without the column
    engine = make_engine(url)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM api_token WHERE user_id = 7")).scalar() == 1
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1  # the app's connections still enforce them
    engine.dispose()


def test_dropping_submission_kind_downgrades_with_the_kind_read_off_the_payload(empty_database: str) -> None:
    """f1a3c5e7b9d2 drops submission.kind (nothing read it); going back writes it from each payload's key."""
    from sqlalchemy import text

    upgrade(empty_database)
    engine = make_engine(empty_database)
    with engine.begin() as conn:
        conn.execute(
            text(
                'INSERT INTO "user" (id, email, display_name, role, password_hash, is_active, created_at) '
                "VALUES (7, 'u@x.org', '', 'user', 'h', true, CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO problem_set (id, slug, title, is_visible, created_at) "
                "VALUES (1, 's', 'S', true, CURRENT_TIMESTAMP)"
            )
        )
        conn.execute(
            text(
                "INSERT INTO problem_set_version (id, problem_set_id, number, label, content_hash, spec, archive, "
                "validation_report, created_at) VALUES (1, 1, 1, '1', 'h', '{}', :a, '{}', CURRENT_TIMESTAMP)"
            ),
            {"a": b""},
        )
        for sid, payload in ((1, '{"answers": {"b1": "x"}}'), (2, '{"code": "def f(): pass"}')):
            conn.execute(
                text(
                    "INSERT INTO submission (id, user_id, problem_set_version_id, problem_id, payload, status, "
                    "source, attempt, created_at, grading_attempts) "
                    "VALUES (:id, 7, 1, 'q1', :payload, 'graded', 'api', :id, CURRENT_TIMESTAMP, 0)"
                ),
                {"id": sid, "payload": payload},
            )
    engine.dispose()
    downgrade(empty_database, "e4f6a8c0b2d4")
    engine = make_engine(empty_database)
    try:
        with engine.connect() as conn:
            kinds = conn.execute(text("SELECT id, kind FROM submission ORDER BY id")).all()
        assert [tuple(r) for r in kinds] == [(1, "answers"), (2, "code")]
        assert not next(c for c in inspect(engine).get_columns("submission") if c["name"] == "kind")["nullable"]
    finally:
        engine.dispose()
