"""`autograder db backup FILE` / `db restore FILE`: a consistent copy of the database, taken while the server runs.

SQLite goes through its online backup API (a page-by-page copy that sees one committed state, whatever the server
writes meanwhile); PostgreSQL through `pg_dump -Fc` / `pg_restore`, which take a snapshot of their own. The file
of one backend cannot be restored into the other: the format is recognised from its first bytes and refused with a
message that says so. A restore into a database that holds rows is refused unless `--force`, then migrated to
head, so a backup taken by an older release restores into a newer one.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy import func, inspect, select, table
from sqlalchemy.engine import URL, make_url

from app.cli.common import settings_or_exit
from app.db import make_engine

SQLITE_MAGIC = b"SQLite format 3\x00"
PG_MAGIC = b"PGDMP"
# One step, so one read transaction: in WAL mode it does not block the server's writers, and the copy is of one
# committed state. A copy in several steps would start over after every write of the server, forever on a busy one.
ALL_PAGES = -1


class BackupError(Exception):
    """Bad input or a failed tool: the message is for the operator, nothing was written to the target."""


def _fail(exc: BackupError) -> typer.Exit:
    typer.secho(f"error: {exc}", fg="red", err=True)
    return typer.Exit(1)


def backup(
    file: Annotated[Path, typer.Argument(help="where to write the backup")],
    force: Annotated[bool, typer.Option("--force", help="overwrite FILE if it exists")] = False,
) -> None:
    """Copy the database to FILE while the server runs (SQLite: online backup API; PostgreSQL: pg_dump -Fc)."""
    url = settings_or_exit().resolved_database_url
    try:
        size = backup_database(url, file, force=force)
    except BackupError as exc:
        raise _fail(exc) from exc
    typer.echo(f"backup written to {file} ({size:,} bytes)")


def restore(
    file: Annotated[Path, typer.Argument(help="a file written by `autograder db backup`")],
    force: Annotated[bool, typer.Option("--force", help="replace a database that already holds data")] = False,
) -> None:
    """Restore FILE into the configured database (empty unless --force), then migrate it to head."""
    settings = settings_or_exit()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    try:
        restore_database(settings.resolved_database_url, file, force=force)
    except BackupError as exc:
        raise _fail(exc) from exc
    typer.echo(f"restored {file}; database migrated to head")


def backup_database(url: str, file: Path, *, force: bool = False) -> int:
    """Write a backup of the database at ``url`` to ``file``; returns its size. Atomic: a failure leaves no file."""
    if file.exists() and not force:
        raise BackupError(f"{file} exists; pass --force to overwrite it")
    if not file.parent.is_dir():
        raise BackupError(f"no folder {file.parent} to write {file.name} into")
    partial = file.with_name(f".{file.name}.partial")
    try:
        if _is_sqlite(url):
            _sqlite_backup(_sqlite_path(url), partial)
        else:
            _run([_tool("pg_dump"), "-Fc", "--no-owner", "--no-privileges", "-f", str(partial)], url, "pg_dump")
        partial.replace(file)
    finally:
        partial.unlink(missing_ok=True)
    return file.stat().st_size


def restore_database(url: str, file: Path, *, force: bool = False) -> None:
    """Restore ``file`` into the database at ``url``, refusing one that holds rows unless ``force``."""
    from app.migrate import upgrade

    kind = backup_kind(file)
    target = "sqlite" if _is_sqlite(url) else "postgresql"
    if kind != target:
        raise BackupError(f"{file} is a {kind} backup; the configured database is {target}")
    rows = _rows_held(url)
    if rows and not force:
        raise BackupError(f"the database already holds data ({rows}); pass --force to replace it")
    if kind == "sqlite":
        _sqlite_restore(file, _sqlite_path(url))
    else:
        # --clean drops what the target has (a migrated but empty schema, or data under --force) in the same
        # transaction that recreates it: a failed restore leaves the target as it was.
        cmd = [_tool("pg_restore"), "--no-owner", "--no-privileges", "--single-transaction", "--exit-on-error"]
        if _has_tables(url):
            cmd += ["--clean", "--if-exists"]
        _run([*cmd, str(file)], url, "pg_restore")
    upgrade(url)


def backup_kind(file: Path) -> str:
    """'sqlite' or 'postgresql', from the file's first bytes; anything else is refused."""
    if not file.is_file():
        raise BackupError(f"no backup file {file}")
    with file.open("rb") as fh:
        head = fh.read(len(SQLITE_MAGIC))
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head.startswith(PG_MAGIC):
        return "postgresql"
    raise BackupError(f"{file} is not a backup written by `autograder db backup` (neither SQLite nor pg_dump -Fc)")


def _is_sqlite(url: str) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def _sqlite_path(url: str) -> Path:
    database = make_url(url).database
    if not database or database == ":memory:":
        raise BackupError("an in-memory SQLite database cannot be backed up or restored")
    return Path(database)


def _sqlite_backup(source: Path, dest: Path) -> None:
    if not source.is_file():
        raise BackupError(f"no SQLite database at {source}")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    dst = sqlite3.connect(dest)
    try:
        _announce(src, source)
        src.backup(dst, pages=ALL_PAGES, progress=_progress)
    except sqlite3.Error as exc:
        raise BackupError(f"SQLite backup failed: {exc}") from exc
    finally:
        dst.close()
        src.close()
    typer.echo("", err=True)


def _sqlite_restore(file: Path, dest: Path) -> None:
    src = sqlite3.connect(f"file:{file}?mode=ro", uri=True)
    try:
        names = {row[0] for row in src.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "alembic_version" not in names:
            raise BackupError(f"{file} is a SQLite file but not an autograder database (no alembic_version)")
        dest.parent.mkdir(parents=True, exist_ok=True)
        dst = sqlite3.connect(dest, timeout=10)
        try:
            # The backup API replaces the target's pages in one write transaction (one step): readers see the old
            # database or the restored one, never a mix.
            _announce(src, file)
            src.backup(dst, pages=ALL_PAGES, progress=_progress)
        finally:
            dst.close()
    except sqlite3.Error as exc:
        raise BackupError(f"SQLite restore from {file} failed: {exc}") from exc
    finally:
        src.close()
    typer.echo("", err=True)


def _announce(src: sqlite3.Connection, path: Path) -> None:
    pages = src.execute("PRAGMA page_count").fetchone()[0]
    size = pages * src.execute("PRAGMA page_size").fetchone()[0]
    typer.echo(f"  copying {path}: {pages} pages ({size / 2**20:.1f} MiB)", err=True)


def _progress(_status: int, remaining: int, total: int) -> None:
    done = total - remaining
    typer.echo(f"\r  {done}/{total} pages ({100 * done // max(total, 1)}%)", nl=False, err=True)


def _has_tables(url: str) -> bool:
    engine = make_engine(url)
    try:
        return bool(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def _rows_held(url: str) -> str:
    """'' for an empty database (no tables, or a migrated schema with no rows), else which tables hold rows."""
    if _is_sqlite(url) and not _sqlite_path(url).exists():
        return ""
    engine = make_engine(url)
    try:
        names = [name for name in inspect(engine).get_table_names() if name != "alembic_version"]
        with engine.connect() as conn:
            held = [name for name in names if conn.scalar(select(func.count()).select_from(table(name)))]
    finally:
        engine.dispose()
    return ", ".join(f"table {name}" for name in sorted(held))


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BackupError(f"{name} is not on PATH: install the PostgreSQL client tools (e.g. postgresql-client)")
    return path


def _run(cmd: list[str], url: str, what: str) -> None:
    """Run a PostgreSQL tool against ``url``; the password travels in the environment, never on the command line."""
    parsed: URL = make_url(url)
    env = {**os.environ}
    if parsed.password is not None:
        env["PGPASSWORD"] = str(parsed.password)
    conninfo = parsed.set(drivername="postgresql", password=None).render_as_string(hide_password=False)
    typer.echo(f"  running {what} on {parsed.host or 'localhost'}/{parsed.database} ...", err=True)
    result = subprocess.run([*cmd, f"--dbname={conninfo}"], env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise BackupError(f"{what} failed (exit {result.returncode}): {result.stderr.strip()[-2000:]}")
