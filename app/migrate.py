"""Run the Alembic migrations programmatically (`autograder db upgrade`), on SQLite or PostgreSQL alike."""

from __future__ import annotations

from alembic import command
from alembic.config import Config

from app.config import REPO_ROOT

MIGRATIONS_DIR = REPO_ROOT / "migrations"


def alembic_config(database_url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("file_template", "%%(year)d%%(month).2d%%(day).2d_%%(slug)s")
    # "%" must be doubled for configparser; URLs may contain it (passwords).
    cfg.set_main_option("sqlalchemy.url", database_url.replace("%", "%%"))
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(database_url), revision)


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)
