"""Helpers shared by CLI commands: settings, a migrated session factory (and one command's session on it, its domain
errors printed), resolving a set by name or path."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings, get_settings
from app.db import engine_for, make_session_factory
from app.errors import DomainError
from graders.model import ProblemBase
from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.loader import LoadedSet, load_problem_set

# `problems show --seed` and `grade --seed`: a variant of a problem with parameters, by its seed.
SeedOpt = Annotated[
    int | None,
    typer.Option(min=0, help="a variant's seed (the gradebook CSV's variant column): its numbers and key"),
]


def settings_or_exit() -> Settings:
    try:
        return get_settings()
    except ValueError as exc:
        typer.secho(f"configuration error: {exc}", fg="red", err=True)
        raise typer.Exit(2) from exc


def migrated_sessions(settings: Settings) -> sessionmaker[Session]:
    from app.migrate import upgrade  # alembic: a sixth of the CLI's start, paid only by commands that open the database

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.resolved_database_url)
    return make_session_factory(engine_for(settings))  # one engine, with the settings' timeouts (app.db)


@contextmanager
def admin_session(settings: Settings | None = None) -> Iterator[Session]:
    """One command's session on the migrated database; a domain error raised in it is printed (with the rows of a
    file it refused, as a roster's) and the command exits 1."""
    with migrated_sessions(settings if settings is not None else settings_or_exit())() as session:
        try:
            yield session
        except DomainError as exc:
            typer.secho(f"error: {exc.message}", fg="red", err=True)
            for row in exc.extra.get("errors", []):
                typer.secho(f"  line {row['line']}: {row['msg']}", fg="red", err=True)
            raise typer.Exit(1) from exc


def resolve_set_dir(name_or_path: str, settings: Settings) -> Path:
    """A folder path, or the id of a set shipped in problems/."""
    path = Path(name_or_path)
    if (path / "problemset.yaml").is_file():
        return path
    shipped = settings.problems_dir / name_or_path
    if (shipped / "problemset.yaml").is_file():
        return shipped
    available = sorted(p.parent.name for p in settings.problems_dir.glob("*/problemset.yaml"))
    typer.secho(f"no problem set {name_or_path!r} (a folder, or one of {available})", fg="red", err=True)
    raise typer.Exit(2)


def print_set_errors(exc: ProblemSetInvalid) -> None:
    for error in exc.errors:
        typer.secho(f"  error: {error}", fg="red", err=True)


def load_set_or_exit(name_or_path: str, settings: Settings, *, exit_code: int) -> LoadedSet:
    """Load a set by id or folder; on errors print every one and exit with ``exit_code``."""
    try:
        return load_problem_set(resolve_set_dir(name_or_path, settings))
    except ProblemSetInvalid as exc:
        print_set_errors(exc)
        raise typer.Exit(exit_code) from exc


def variant_or_exit(settings: Settings, loaded: LoadedSet, problem: ProblemBase, seed: int, *, exit_code: int) -> Any:
    """The variant of ``problem`` for ``seed`` (``--seed``: a student's, as the gradebook CSV's variant column gives
    it), its generator run in the set's jailed checker as the service runs it; exits where it has none."""
    from app.problemsets.variants import close_variant_checkers, variant_checkers
    from graders.problemset.variants import VariantFailed, VariantInvalid, parse_variant

    if problem.generator is None:
        typer.secho(f"error: {problem.id} has no parameters, so no seeds", fg="red", err=True)
        raise typer.Exit(exit_code)
    try:
        return parse_variant(variant_checkers(settings).variant(loaded.root, problem.generator, seed), problem)
    except (VariantFailed, VariantInvalid) as exc:
        typer.secho(f"error: the generator of {problem.id} failed for seed {seed}: {exc}", fg="red", err=True)
        raise typer.Exit(exit_code) from None
    finally:
        close_variant_checkers()
