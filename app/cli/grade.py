"""`autograder grade`: grade answers or a .py file against a set offline (no server, no database)."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated, NoReturn

import typer

from app.cli.common import SeedOpt, load_set_or_exit, settings_or_exit, variant_or_exit
from app.errors import Invalid
from app.submissions.gradescope import GradescopeResults, error_document, from_grade_result
from app.submissions.intake import parse_answers_json, read_source_file
from app.submissions.notebook import left_out_notice, with_cells
from app.worker.code_grader import LazyCodeGrader
from graders.grade import check_payload, grade_submission
from graders.kinds import Payload, PayloadInvalid, kind_of
from graders.model import ProblemBase
from graders.results import GradeResult


class Format(StrEnum):
    TEXT = "text"
    JSON = "json"
    GRADESCOPE = "gradescope"


class _BadInput(Exception):
    def __init__(self, message: str) -> None:
        self.message = message


def grade(
    set_name: Annotated[str, typer.Option("--set", help="a shipped set id (e.g. ch9) or a set folder")],
    problem: Annotated[str, typer.Option(help="problem id, e.g. q1")],
    file: Annotated[Path | None, typer.Argument(help="a .py file or a notebook (.ipynb), for code problems")] = None,
    answers: Annotated[str | None, typer.Option(help='JSON map of part id to answer, e.g. \'{"b1": "V"}\'')] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print one JSON document (same as --format json)")] = False,
    fmt: Annotated[
        Format, typer.Option("--format", help="text, json, or gradescope (Gradescope's results.json)")
    ] = Format.TEXT,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="write the document here, not stdout")] = None,
    seed: SeedOpt = None,
) -> None:
    """Grade offline. Exit 0 on full marks, 1 otherwise, 2 on bad input. ``--seed`` grades a problem with
    parameters against that seed's variant (a student's, as the gradebook CSV's variant column names it).

    With ``--format gradescope`` bad input still writes a results.json (score 0, the reason as its output), so a
    student on Gradescope reads why nothing was graded.
    """
    fmt = Format.JSON if as_json and fmt is Format.TEXT else fmt
    settings = settings_or_exit()
    loaded = load_set_or_exit(set_name, settings, exit_code=2)
    try:
        spec = loaded.spec.problem(problem)
        if spec is None:
            raise _BadInput(f"no problem {problem!r}; the set has {[p.id for p in loaded.spec.problems]}")
        payload = _payload(spec, file, answers)
    except _BadInput as exc:
        if fmt is Format.GRADESCOPE:
            _emit(error_document(f"not graded: {exc.message}").model_dump_json(indent=2), output)
        _fail(exc.message)
    # A problem with parameters: that seed's variant, or without --seed the YAML's own numbers.
    variant = variant_or_exit(settings, loaded, spec, seed, exit_code=2) if seed is not None else None
    grader = LazyCodeGrader(settings)
    try:
        result = grade_submission(loaded, problem, payload, grader, variant)
    finally:
        grader.close()
    _cite_cells(result, payload.get("code"))
    if fmt is Format.GRADESCOPE:
        doc: GradescopeResults = from_grade_result(result, due_at=loaded.spec.due_at)
        _emit(doc.model_dump_json(indent=2), output)
    elif fmt is Format.JSON:
        _emit(_json(result), output)
    else:
        _print(result)
    raise typer.Exit(0 if result.max_score > 0 and result.score >= result.max_score else 1)


def _payload(problem: ProblemBase, file: Path | None, answers: str | None) -> Payload:
    """The same checks as a submission through the API: one input path (app.submissions.intake)."""
    try:
        code = read_source_file(file, problem) if file is not None else None
        parsed = parse_answers_json(answers, field="--answers") if answers is not None else None
        if kind_of(problem).takes == "code" and code is None:
            raise _BadInput(f"{problem.id} is a code problem: pass a .py file or a notebook (.ipynb)")
        if kind_of(problem).takes == "answers" and parsed is None:
            raise _BadInput('pass --answers \'{"b1": "..."}\'')
        return check_payload(problem, answers=parsed, code=code)
    except (Invalid, PayloadInvalid) as exc:
        raise _BadInput(exc.message) from exc


def _cite_cells(result: GradeResult, code: object) -> None:
    """A notebook's grade reads as on the server (app.submissions.presenter): feedback cites "cell 3, line 2", and
    the message says which IPython lines were left out."""
    if not isinstance(code, str):
        return
    for check in result.checks:
        check.feedback = with_cells(check.feedback, code)
    notice = left_out_notice(code)
    if notice:
        result.message = f"{result.message} {notice}".strip()


def _fail(message: str) -> NoReturn:
    typer.secho(f"error: {message}", fg="red", err=True)
    raise typer.Exit(2)


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        typer.echo(text)
    else:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text + "\n", encoding="utf-8")


def _json(result: GradeResult) -> str:
    doc = result.to_dict()
    keys = ("name", "category", "passed", "score", "max_score", "feedback")
    doc["checks"] = [{k: c[k] for k in keys} for c in doc["checks"]]
    return json.dumps(doc, ensure_ascii=False, indent=2)


def _print(result: GradeResult) -> None:
    typer.secho(f"{result.verdict}: {result.score:g} / {result.max_score:g}", bold=True)
    if result.message:
        typer.echo(result.message)
    for check in result.checks:
        mark = "✓" if check.passed else "✗"
        typer.echo(f"  {mark} {check.name} [{check.category}] {check.score:g}/{check.max_score:g}  {check.feedback}")
