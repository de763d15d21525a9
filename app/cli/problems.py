"""`autograder problems validate|load|list|show`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from sqlalchemy.orm import Session, sessionmaker

from app.cli.common import (
    SeedOpt,
    load_set_or_exit,
    migrated_sessions,
    print_set_errors,
    settings_or_exit,
    variant_or_exit,
)
from app.config import Settings
from app.courses import course_sets
from app.problemsets import refused, service
from app.problemsets.service import ProblemSetRejected
from app.problemsets.variants import close_variant_checkers, variant_checkers
from app.worker.code_grader import LazyCodeGrader, sandbox_config
from graders.grade import problem_view, validate_set
from graders.model import ProblemBase
from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.loader import LoadedSet, load_problem_set

app = typer.Typer(help="Validate, load and inspect problem sets.", no_args_is_help=True)


@app.command()
def validate(
    folder: Annotated[Path, typer.Argument(help="a problem-set folder")],
    as_json: Annotated[bool, typer.Option("--json", help="print the report as JSON")] = False,
) -> None:
    """Check a set completely (schema, files, answer cases, reference solutions, mutant matrix); exit 1 on errors."""
    settings = settings_or_exit()
    try:
        loaded = load_problem_set(folder)
    except ProblemSetInvalid as exc:
        if as_json:
            typer.echo(json.dumps({"ok": False, "errors": [e.to_dict() for e in exc.errors]}, ensure_ascii=False))
        else:
            typer.secho(f"INVALID: {len(exc.errors)} error(s) in {folder}", fg="red", err=True)
            print_set_errors(exc)
        raise typer.Exit(1) from exc
    grader = LazyCodeGrader(settings)
    try:
        report = validate_set(loaded, code_grader=grader, progress=_progress, max_grading_s=settings.grading_lease_s,
                              variants=variant_checkers(settings), variant_draws=settings.variant_draws)  # fmt: skip
    finally:
        grader.close()
        close_variant_checkers()
    typer.echo(json.dumps(report.to_dict(), ensure_ascii=False, indent=2) if as_json else report.render_text())
    raise typer.Exit(0 if report.ok else 1)


@app.command()
def load(folders: Annotated[list[Path], typer.Argument(help="problem-set folders")]) -> None:
    """Validate and store sets in the database (a changed set becomes a new version)."""
    settings = settings_or_exit()
    sessions = migrated_sessions(settings)
    grader = LazyCodeGrader(settings)
    failed = False
    try:
        for folder in folders:
            failed |= not load_one(sessions, folder, grader)
    finally:
        grader.close()
        close_variant_checkers()
    raise typer.Exit(1 if failed else 0)


def load_one(sessions: sessionmaker[Session], folder: Path, grader: LazyCodeGrader, keep_newer: bool = False) -> bool:
    """Load one folder, printing progress; returns False when it was refused. ``keep_newer``: serve's start-up,
    where a folder holding an older version leaves the newer one (made on the web) current."""
    typer.echo(f"loading {folder} ...")
    with sessions() as session:
        try:
            version, report, created = course_sets.load_dir(
                session,
                root=folder,
                grader=grader,
                progress=_progress,
                max_grading_s=grader.settings.grading_lease_s,
                keep_newer=keep_newer,
                variants=variant_checkers(grader.settings),
                variant_draws=grader.settings.variant_draws,
            )
            session.commit()
        except ProblemSetInvalid as exc:
            typer.secho(f"  refused: {len(exc.errors)} error(s)", fg="red", err=True)
            print_set_errors(exc)
            refused.record(grader.settings, folder, errors=[e.to_dict() for e in exc.errors], report=None,
                           text="\n".join(str(e) for e in exc.errors))  # fmt: skip
            return False
        except ProblemSetRejected as exc:
            typer.secho("  refused:", fg="red", err=True)
            typer.echo(exc.report.render_text(), err=True)
            refused.record(grader.settings, folder, errors=[], report=exc.report.to_dict(),
                           text=exc.report.render_text())  # fmt: skip
            return False
        except Exception as exc:  # one broken set must not stop `serve` from loading the others
            typer.secho(f"  failed: {type(exc).__name__}: {exc}", fg="red", err=True)
            return False
        refused.clear(grader.settings, folder)
        state = "new version" if created else "unchanged"
        typer.echo(f"  {version.problem_set.slug} v{version.number} ({state})")
        if created:
            typer.echo("  " + report.render_text().replace("\n", "\n  "))
        return True


def _progress(line: str) -> None:
    typer.echo(f"  grading {line}", err=True)


@app.command("list")
def list_sets() -> None:
    """List the sets in the database with their latest version."""
    settings = settings_or_exit()
    with migrated_sessions(settings)() as session:
        for problem_set, version in service.list_sets(session, include_hidden=True):
            problems = len(version.spec.get("problems", []))
            typer.echo(f"{problem_set.slug}\tv{version.number}\t{problems} problems\t{problem_set.title}")


@app.command()
def show(
    set_name: Annotated[str, typer.Argument(metavar="SET", help="a shipped set id or a folder")],
    problem: Annotated[str | None, typer.Argument(help="one problem id; default: the whole set")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    seed: SeedOpt = None,
) -> None:
    """Print the student view of a set or one problem (prompt, parts with ids and kinds); ``--seed`` shows a
    problem with parameters as that seed's student sees it (without it, the prompt keeps its markers)."""
    settings = settings_or_exit()
    loaded = load_set_or_exit(set_name, settings, exit_code=1)
    items = [p for p in loaded.spec.problems if problem is None or p.id == problem]
    if not items:
        typer.secho(f"no problem {problem!r}; the set has {[p.id for p in loaded.spec.problems]}", fg="red", err=True)
        raise typer.Exit(2)
    report = validate_set(loaded, code_grader=None, only={p.id for p in items})  # points of what is shown
    points: dict[str, float | None] = {**report.points}
    for problem_id, checks_points in code_points(settings, loaded, items).items():  # beside the rubric's points
        points[problem_id] = None if checks_points is None else report.points.get(problem_id, 0.0) + checks_points
    if seed is not None and problem is not None:
        variants = {items[0].id: variant_or_exit(settings, loaded, items[0], seed, exit_code=2)}
    elif seed is not None:
        varied = [p for p in items if p.generator is not None]
        variants = {p.id: variant_or_exit(settings, loaded, p, seed, exit_code=2) for p in varied}
    else:
        variants = {}
    views = [problem_view(p, loaded, points.get(p.id), variants.get(p.id)) for p in items]
    if as_json:
        typer.echo(json.dumps(views[0] if problem else views, ensure_ascii=False, indent=2))
        return
    for view in views:
        shown = "?" if view["points"] is None else view["points"]  # checks that could not be counted
        typer.secho(f"## {view['id']} ({view['kind']}, {shown} points): {view['title']}", bold=True)
        typer.echo(view["prompt"])
        for part in view["parts"]:
            typer.echo(f"  [{part['id']}] {part['kind']}, {part['points']} points")
        typer.echo("")


def code_points(settings: Settings, loaded: LoadedSet, problems: list[ProblemBase]) -> dict[str, float | None]:
    """The points of the code problems shown: what their checks declare, which only importing the checks tells.

    They are imported in the set's jailed checker, as the gate imports them (no zygote for student code is
    started), never in this process: a set's checks are an instructor's code. A problem whose checks cannot be
    imported there (no jail on this machine, a broken file) has None (no points shown), and stderr says why."""
    code = [(p.id, c) for p in problems if (c := p.instructor_code()) is not None]
    if not code:
        return {}  # an answer problem's points need neither torch nor the sandbox
    from graders.code.checker.pool import CheckerPool

    points: dict[str, float | None] = {}
    pool = CheckerPool(sandbox_config(settings, slots=1))
    try:
        for problem_id, instructor in code:
            try:
                points[problem_id] = sum(c.points for c in pool.describe(loaded.root, instructor.checks))
            except Exception as exc:  # the set's code, or a machine without the jail: say so, show the rest
                points[problem_id] = None
                typer.secho(f"{problem_id}: points not counted: {type(exc).__name__}: {exc}"[:500], fg="red", err=True)
    finally:
        pool.close()
    return points
