"""The `autograder` command: serve, worker, db, problems, users, tokens, courses, offerings, roster, assignments,
overrides, webhooks, grade, submit, doctor."""

from __future__ import annotations

import logging
from typing import Annotated

import typer

from app import logs
from app.cli import accounts, backups, problems
from app.cli.common import migrated_sessions, settings_or_exit
from app.cli.courses import assignments_app, courses_app, offerings_app, overrides_app, roster_app
from app.cli.grade import grade
from app.cli.lti import lti_app
from app.cli.submit import submit
from app.cli.webhooks import webhooks_app

app = typer.Typer(help="Autograding for course exercises.", no_args_is_help=True, add_completion=False)
db = typer.Typer(help="Database migrations, backup and restore.", no_args_is_help=True)
app.add_typer(db, name="db")
app.add_typer(problems.app, name="problems")
app.add_typer(accounts.users, name="users")
app.add_typer(accounts.tokens, name="tokens")
db.command("backup")(backups.backup)
db.command("restore")(backups.restore)
app.add_typer(courses_app, name="courses")
app.add_typer(offerings_app, name="offerings")
app.add_typer(roster_app, name="roster")
app.add_typer(assignments_app, name="assignments")
app.add_typer(overrides_app, name="overrides")
app.add_typer(webhooks_app, name="webhooks")
app.add_typer(lti_app, name="lti")
app.command()(grade)
app.command()(submit)


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
    """Migrate, create the first accounts, serve API + embedded workers; the problem sets load in the background."""
    import uvicorn

    from app import server_limits
    from app.courses.accounts import ensure_first_accounts
    from app.main import create_app
    from app.worker.code_grader import LazyCodeGrader

    settings = settings_or_exit()
    logs.configure(settings.log_format)
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
    # One sandbox for gating the shipped sets and for grading: it is warm by the time students submit.
    grader = LazyCodeGrader(settings)
    typer.echo(f"serving on http://{host}:{port} (API docs at /docs); {server_limits.describe(limits)}")
    if settings.load_problems_on_start:
        # Checked after the port opens (app.problemsets.set_loader): a set is offered once its version passed.
        typer.echo(
            f"problem sets in {settings.problems_dir} are checked in the background, one after another; "
            f"their state is at http://{host}:{port}/healthz and on the instructor page"
        )
    asgi_app = create_app(settings, code_grader=grader, load_sets=settings.load_problems_on_start)
    # log_config=None: uvicorn keeps the root logger app.logs configured (JSON lines, no second access log).
    uvicorn.run(
        asgi_app, host=host, port=port, log_level="info", log_config=None, **server_limits.uvicorn_options(limits)
    )


@app.command()
def worker(
    concurrency: Annotated[int | None, typer.Option(help="grading slots (default AUTOGRADER_WORKERS)")] = None,
    nice: Annotated[
        int | None, typer.Option(min=0, max=19, help="CPU priority below the API's (default AUTOGRADER_WORKER_NICE)")
    ] = None,
) -> None:
    """Run grading workers: Celery workers when a broker is configured, else a database-polling pool."""
    from app.server_limits import raise_open_file_limit
    from app.worker.priority import lower_priority

    settings = settings_or_exit()
    logs.configure(settings.log_format)
    raise_open_file_limit()
    # Before any thread or sandbox child starts: they all inherit it (app/worker/priority.py).
    lowered = lower_priority(settings.worker_nice if nice is None else nice)
    logging.getLogger("app.worker").info(
        "worker CPU priority: nice %s, autogroup %s", lowered.nice,
        "left as it is" if lowered.autogroup_nice is None else f"nice {lowered.autogroup_nice}",
    )  # fmt: skip
    if settings.worker_metrics_port:
        # A separate bind, not the API's token-protected route: keep it on a private interface.
        from prometheus_client import start_http_server

        from app.api.metrics import process_registry

        start_http_server(settings.worker_metrics_port, settings.worker_metrics_host, registry=process_registry())
    slots = concurrency or max(1, settings.workers)
    from app import wiring  # the services each kind of worker runs, in order, are written there once

    if settings.broker_url:
        from app.worker.celery_app import run_worker

        with wiring.wire_celery_worker(settings, slots) as runtime:
            runtime.start()
            run_worker(runtime, slots)
        return
    import signal
    import threading

    from app.migrate import upgrade

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    upgrade(settings.resolved_database_url)  # a polling worker may be the first process on a fresh database
    with wiring.wire_polling_worker(settings, slots) as runtime:
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
        runtime.start()
        typer.echo(f"worker: {slots} slot(s) polling {settings.resolved_database_url.split('@')[-1]}")
        stop.wait()


@app.command()
def doctor(
    as_json: Annotated[bool, typer.Option("--json", help="print the facts as JSON")] = False,
    bwrap: Annotated[str, typer.Option(help="the bubblewrap binary to check")] = "bwrap",
) -> None:
    """Check this host for the code sandbox (bubblewrap, root, cgroups, seccomp); exit 1 if it cannot be safe here."""
    from app.cli import doctor as probes  # the sandbox's modules: only this command loads them, not --help

    probes.run(as_json=as_json, bwrap=bwrap)


if __name__ == "__main__":
    app()
