"""The `autograder` command: serve, worker, db, problems, users, tokens, grade, submit, doctor."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from app.cli import accounts, backups, problems
from app.cli.common import migrated_sessions, settings_or_exit
from app.cli.doctor import doctor
from app.cli.grade import grade
from app.cli.submit import submit

app = typer.Typer(help="Autograding for course exercises.", no_args_is_help=True, add_completion=False)
db = typer.Typer(help="Database migrations, backup and restore.", no_args_is_help=True)
app.add_typer(db, name="db")
app.add_typer(problems.app, name="problems")
app.add_typer(accounts.users, name="users")
app.add_typer(accounts.tokens, name="tokens")
db.command("backup")(backups.backup)
db.command("restore")(backups.restore)
app.command()(grade)
app.command()(submit)
app.command()(doctor)


@db.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument()] = "head") -> None:
    """Apply migrations (SQLite or PostgreSQL)."""
    from app.migrate import upgrade

    settings = settings_or_exit()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.resolved_database_url, revision)
    typer.echo(f"database at {revision}")


@db.command("downgrade")
def db_downgrade(revision: Annotated[str, typer.Argument()]) -> None:
    """Revert migrations down to REVISION ('base' empties the database)."""
    from app.migrate import downgrade

    downgrade(settings_or_exit().resolved_database_url, revision)
    typer.echo(f"database at {revision}")


@app.command()
def serve(
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
) -> None:
    """Migrate, load the shipped problem sets, create the first accounts, then serve API + embedded workers."""
    import uvicorn

    from app import server_limits
    from app.main import create_app
    from app.users.service import ensure_first_accounts
    from app.worker.code_grader import LazyCodeGrader

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = settings_or_exit()
    # Before the sandbox or the database opens anything: a connection flood must not take their fds.
    limits = server_limits.connection_limits(settings, server_limits.raise_open_file_limit())
    if settings.sandbox == "unsafe-local":
        typer.secho(
            "WARNING: AUTOGRADER_SANDBOX=unsafe-local: student code runs WITHOUT A SANDBOX", fg="red", bold=True
        )
    sessions = migrated_sessions(settings)
    with sessions() as session:
        created = ensure_first_accounts(session)
        session.commit()
    if created:
        typer.secho("First start: created these accounts. The passwords are shown only now:", bold=True)
        for email, role, password in created:
            typer.echo(f"  {role:<10} {email:<28} password: {password}")
    # One sandbox for validating the shipped sets and then for grading: it is warm by the time students submit.
    grader = LazyCodeGrader(settings)
    if settings.load_problems_on_start:
        for folder in sorted(p.parent for p in settings.problems_dir.glob("*/problemset.yaml")):
            problems.load_one(sessions, folder, grader)
    typer.echo(f"serving on http://{host}:{port} (API docs at /docs); {server_limits.describe(limits)}")
    asgi_app = create_app(settings, code_grader=grader)
    uvicorn.run(asgi_app, host=host, port=port, log_level="info", **server_limits.uvicorn_options(limits))


@app.command()
def worker(
    concurrency: Annotated[int | None, typer.Option(help="grading slots (default AUTOGRADER_WORKERS)")] = None,
) -> None:
    """Run grading workers: Celery workers when a broker is configured, else a database-polling pool."""
    from app.server_limits import raise_open_file_limit

    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    settings = settings_or_exit()
    raise_open_file_limit()
    slots = concurrency or max(1, settings.workers)
    if settings.broker_url:
        from app.worker.celery_app import run_worker

        run_worker(settings, slots)
        return
    import signal
    import threading

    from app.migrate import upgrade
    from app.worker.pool import EmbeddedPool
    from app.worker.runtime import WorkerRuntime

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.resolved_database_url)  # a polling worker may be the first process on a fresh database
    with WorkerRuntime(settings, slots=slots) as runtime:
        pool = EmbeddedPool(runtime.job, slots, poll_s=0.5)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        pool.start()
        runtime.prewarm()
        typer.echo(f"worker: {slots} slot(s) polling {settings.resolved_database_url.split('@')[-1]}")
        stop.wait()
        pool.stop()


if __name__ == "__main__":
    app()
