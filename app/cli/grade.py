"""`autograder grade`: grade answers or a .py file against a set offline (no server, no database)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from app.cli.common import load_set_or_exit, settings_or_exit
from app.errors import Invalid
from app.submissions.intake import parse_answers_json, read_source_file
from app.worker.code_grader import LazyCodeGrader
from graders.grade import check_payload, grade_submission
from graders.kinds import Payload, PayloadInvalid, kind_of
from graders.model import ProblemBase
from graders.results import GradeResult


def grade(
    set_name: Annotated[str, typer.Option("--set", help="a shipped set id (e.g. ch9) or a set folder")],
    problem: Annotated[str, typer.Option(help="problem id, e.g. q1")],
    file: Annotated[Path | None, typer.Argument(help="a .py file, for code problems")] = None,
    answers: Annotated[str | None, typer.Option(help='JSON map of part id to answer, e.g. \'{"b1": "V"}\'')] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document")] = False,
) -> None:
    """Grade offline. Exit 0 on full marks, 1 otherwise, 2 on bad input."""
    settings = settings_or_exit()
    loaded = load_set_or_exit(set_name, settings, exit_code=2)
    spec = loaded.spec.problem(problem)
    if spec is None:
        _fail(f"no problem {problem!r}; the set has {[p.id for p in loaded.spec.problems]}")
    payload = _payload(spec, file, answers)
    grader = LazyCodeGrader(settings)
    try:
        result = grade_submission(loaded, problem, payload, grader)
    finally:
        grader.close()
    _print(result, as_json)
    raise typer.Exit(0 if result.max_score > 0 and result.score >= result.max_score else 1)


def _payload(problem: ProblemBase, file: Path | None, answers: str | None) -> Payload:
    """The same checks as a submission through the API: one input path (app.submissions.intake)."""
    try:
        code = read_source_file(file) if file is not None else None
        parsed = parse_answers_json(answers, field="--answers") if answers is not None else None
        if kind_of(problem).takes == "code" and code is None:
            _fail(f"{problem.id} is a code problem: pass a .py file")
        if kind_of(problem).takes == "answers" and parsed is None:
            _fail('pass --answers \'{"b1": "..."}\'')
        return check_payload(problem, answers=parsed, code=code)
    except Invalid as exc:
        _fail(exc.message)
    except PayloadInvalid as exc:
        _fail(exc.message)


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg="red", err=True)
    raise typer.Exit(2)


def _print(result: GradeResult, as_json: bool) -> None:
    if as_json:
        doc = result.to_dict()
        keys = ("name", "category", "passed", "score", "max_score", "feedback")
        doc["checks"] = [{k: c[k] for k in keys} for c in doc["checks"]]
        typer.echo(json.dumps(doc, ensure_ascii=False, indent=2))
        return
    typer.secho(f"{result.verdict}: {result.score:g} / {result.max_score:g}", bold=True)
    if result.message:
        typer.echo(result.message)
    for check in result.checks:
        mark = "✓" if check.passed else "✗"
        typer.echo(f"  {mark} {check.name} [{check.category}] {check.score:g}/{check.max_score:g}  {check.feedback}")
