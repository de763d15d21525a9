"""`autograder submit`: the CI client. Exit 0 only on full marks; optional JUnit report."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any
from xml.etree import ElementTree as ET

import httpx
import typer

from app.errors import Invalid
from app.submissions.intake import parse_answers_json, read_source_file
from app.submissions.notebook import left_out_notice


def submit(
    set_name: Annotated[str, typer.Option("--set", help="problem-set id on the server")],
    problem: Annotated[str, typer.Option(help="problem id")],
    file: Annotated[Path | None, typer.Argument(help="a .py file or a notebook (.ipynb), for code problems")] = None,
    answers: Annotated[str | None, typer.Option(help="JSON map of part id to answer")] = None,
    offering: Annotated[int | None, typer.Option(help="offering id, when the set is in several of yours")] = None,
    url: Annotated[str, typer.Option(envvar="AUTOGRADER_URL", help="server base URL")] = "http://127.0.0.1:8000",
    token: Annotated[str | None, typer.Option(envvar="AUTOGRADER_TOKEN", help="API token")] = None,
    wait: Annotated[float, typer.Option(help="seconds to wait for the grade")] = 60.0,
    junit: Annotated[Path | None, typer.Option(help="write a JUnit XML report here")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="retry-safe key (e.g. the CI run id)")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Submit to a server and wait for the grade. Exit 0 on full marks, 1 otherwise (or while the assignment seals
    scores), 2 on errors (a refused attempt included)."""
    if not token:
        _fail("pass --token or set AUTOGRADER_TOKEN")
    body: dict[str, Any] = {"problem_set": set_name, "problem": problem, "source": "ci"}
    if offering is not None:
        body["offering"] = offering
    if file is None and answers is None:
        _fail('pass a .py file, a notebook or --answers \'{"b1": "..."}\'')
    try:
        # Read and decode as the server would (app.submissions.intake), so a bad file fails here, clearly.
        if file is not None:
            body["code"] = read_source_file(file, problem)
        if answers is not None:
            body["answers"] = parse_answers_json(answers, field="--answers")
    except Invalid as exc:
        _fail(exc.message)
    headers = {"Authorization": f"Bearer {token}"}
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    try:
        with httpx.Client(base_url=url, headers=headers, timeout=wait + 30) as client:
            resp = client.post("/api/v1/submissions", params={"wait": wait}, json=body)
            if resp.status_code >= 400:
                _fail(f"server said {resp.status_code}: {_detail(resp)}")
            result = resp.json()
    except httpx.HTTPError as exc:
        _fail(f"cannot reach {url}: {exc}")
    if junit is not None:
        write_junit(result, junit)
    if as_json:
        typer.echo(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        _print(result)
        notice = left_out_notice(body["code"]) if "code" in body else None
        if notice:  # a notebook's IPython lines (the server's message says so too, in --json)
            typer.echo(notice)
    if result["status"] != "graded":
        typer.secho(f"not graded within {wait:g} s (status {result['status']}); see {url}{result['status_url']}")
        raise typer.Exit(2)
    if result["final_score"] is None:  # the assignment releases scores later: not known to be full marks
        raise typer.Exit(1)
    full = result["max_score"] and result["final_score"] >= result["max_score"]
    raise typer.Exit(0 if full else 1)


def _detail(resp: httpx.Response) -> str:
    try:
        return "; ".join(d.get("msg", "") for d in resp.json().get("detail", []))
    except (ValueError, AttributeError):
        return resp.text[:500]


def _fail(message: str) -> Any:
    typer.secho(f"error: {message}", fg="red", err=True)
    raise typer.Exit(2)


def _print(result: dict[str, Any]) -> None:
    if result["status"] == "graded" and result["final_score"] is None:
        typer.secho(result["message"], bold=True)  # sealed by the release policy: the server sends no score
    else:
        typer.secho(f"{result['verdict']}: {result['final_score']} / {result['max_score']}", bold=True)
    for check in result["checks"]:
        mark = "?" if check["passed"] is None else "✓" if check["passed"] else "✗"  # ?: sealed until released
        score = "?" if check["score"] is None else check["score"]
        typer.echo(f"  {mark} {check['name']} [{check['category']}] {score}/{check['max_score']}")
        if check["feedback"]:
            typer.echo(f"      {check['feedback']}")


def write_junit(result: dict[str, Any], path: Path) -> None:
    """One testcase per check; a check below full marks is a failure carrying its feedback."""
    checks = result.get("checks", [])
    suite = ET.Element(
        "testsuite",
        name=f"{result['problem_set']}.{result['problem']}",
        tests=str(len(checks)),
        failures=str(sum(1 for c in checks if c["passed"] is False)),
    )
    for check in checks:
        case = ET.SubElement(suite, "testcase", classname=result["problem"], name=check["name"])
        case.set("time", f"{check.get('duration_ms', 0) / 1000:.3f}")
        if check["passed"] is None:  # sealed by the release policy
            ET.SubElement(case, "skipped", message=check["feedback"])
        elif not check["passed"]:
            failure = ET.SubElement(case, "failure", message=f"{check['score']}/{check['max_score']}")
            failure.text = check["feedback"]
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
