"""The courses migration on a database with today's data in it: up (into a default offering) and down again."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import text

from app.db import make_engine
from app.migrate import downgrade, upgrade
from tests.conftest import fresh_postgres_database

BEFORE = "f3456932dde2"


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def old_database(request, tmp_path) -> Iterator[str]:  # type: ignore[no-untyped-def]
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
        upgrade(url, BEFORE)
        yield url
        return
    with fresh_postgres_database("autograder_cmig") as url:
        upgrade(url, BEFORE)
        yield url


def _seed(url: str) -> None:
    now = datetime.now(UTC)
    engine = make_engine(url)
    with engine.begin() as conn:
        for uid, email, role in ((1, "t@x.org", "instructor"), (2, "s@x.org", "student"), (3, "a@x.org", "admin")):
            conn.execute(
                text(
                    'INSERT INTO "user" (id, email, display_name, role, password_hash, is_active, created_at) '
                    "VALUES (:id, :email, '', :role, 'h', true, :now)"
                ),
                {"id": uid, "email": email, "role": role, "now": now},
            )
        conn.execute(
            text("INSERT INTO problem_set (id, slug, title, is_visible, created_at) VALUES (1, 'ch9', 'C', true, :n)"),
            {"n": now},
        )
        conn.execute(
            text(
                "INSERT INTO problem_set_version (id, problem_set_id, number, label, content_hash, spec, archive, "
                "validation_report, created_at) VALUES (1, 1, 1, '1', 'h', :spec, :a, '{}', :n)"
            ),
            {"spec": '{"id": "ch9", "show_explanations": "after_due"}', "a": b"", "n": now},
        )
        # Two submissions that raced to the same attempt number (possible before the constraint), and a third.
        for sid, attempt in ((1, 1), (2, 1), (3, 2)):
            conn.execute(
                text(
                    "INSERT INTO submission (id, user_id, problem_set_version_id, problem_id, kind, payload, status, "
                    "source, attempt, created_at, grading_attempts) "
                    "VALUES (:id, 2, 1, 'q1', 'answers', '{}', 'graded', 'api', :attempt, :n, 0)"
                ),
                {"id": sid, "attempt": attempt, "n": now},
            )
    engine.dispose()


def _rows(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = [tuple(r) for r in conn.execute(text(sql))]
    engine.dispose()
    return rows


def test_existing_data_moves_into_a_default_offering_and_back(old_database: str) -> None:
    _seed(old_database)
    upgrade(old_database)

    assert _rows(old_database, "SELECT slug FROM course") == [("default",)]
    assert _rows(old_database, "SELECT slug, is_default FROM offering") == [("default", True)]
    assert sorted(_rows(old_database, "SELECT user_id, role, status FROM membership")) == [
        (1, "instructor", "active"),
        (2, "student", "active"),
        (3, "instructor", "active"),
    ]
    assert sorted(_rows(old_database, 'SELECT id, role FROM "user"')) == [(1, "user"), (2, "user"), (3, "admin")]
    # The set's show_explanations: after_due carried into the release policy.
    assert _rows(old_database, "SELECT release_explanation, release_answer_key FROM assignment") == [
        ("after_due", "after_due")
    ]
    # Its students saw it before drafts existed: it stays published (assignment_published).
    assert _rows(old_database, "SELECT count(*) FROM assignment WHERE published_at IS NULL") == [(0,)]
    assert _rows(old_database, "SELECT id, assignment_id, attempt FROM submission ORDER BY id") == [
        (1, 1, 1),
        (2, 1, 2),
        (3, 1, 3),
    ]

    downgrade(old_database, BEFORE)
    assert sorted(_rows(old_database, 'SELECT id, role FROM "user"')) == [
        (1, "instructor"),
        (2, "student"),
        (3, "admin"),
    ]
    assert _rows(old_database, "SELECT count(*) FROM submission") == [(3,)]
    upgrade(old_database)  # and up once more: the downgrade left nothing in the way
    assert _rows(old_database, "SELECT count(*) FROM membership") == [(3,)]


def test_a_fresh_database_gets_no_default_course(old_database: str) -> None:
    upgrade(old_database)
    assert _rows(old_database, "SELECT count(*) FROM course") == [(0,)]
