"""The one input path of a submission: the API body (JSON or multipart), the web form and the CLI all read answers
and source here, so a file grades the same whichever way it arrives.

Source is decoded one way everywhere: strict UTF-8 (an invalid byte is a 422 naming its offset), a leading BOM
dropped, CRLF and lone CR line ends turned into LF (what Windows editors and browsers' text boxes send).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request

from app.errors import Invalid, UnsupportedMediaType
from app.submissions.schemas import SubmissionCreate
from graders.kinds import kind_of
from graders.model import ProblemBase

ANSWER_PREFIX = "answer."  # web form fields are named answer.b1, answer.b2, ...
_BOM = "\ufeff"


def decode_source(data: bytes | str, *, name: str = "the source", field: str = "code") -> str:
    """Source text as it will be stored and graded; raises Invalid for bytes that are not UTF-8."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Invalid(
                f"{name} is not UTF-8 text: byte 0x{data[exc.start]:02x} at offset {exc.start} "
                "cannot be decoded; save the file as UTF-8",
                field=field,
            ) from exc
    else:
        text = data
    return text.removeprefix(_BOM).replace("\r\n", "\n").replace("\r", "\n")


def read_source_file(path: Path) -> str:
    """A .py file for the CLI, decoded like an upload; raises Invalid when it cannot be read."""
    try:
        return decode_source(path.read_bytes(), name=str(path), field="file")
    except OSError as exc:
        raise Invalid(f"cannot read {path}: {exc.strerror}", field="file") from exc


def parse_answers_json(text: str, *, field: str = "answers") -> dict[str, str]:
    """A JSON object of part id -> text (a multipart ``answers`` field, the CLI's ``--answers``)."""
    try:
        parsed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Invalid(f"{field} is not valid JSON: {exc.msg}", field=field) from exc
    except RecursionError as exc:
        raise Invalid(f"{field} is nested too deeply", field=field) from exc
    if not isinstance(parsed, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()):
        raise Invalid(f'{field} must be a JSON object of strings, e.g. {{"b1": "V"}}', field=field)
    return parsed


async def parse_api_body(request: Request) -> SubmissionCreate:
    """``POST /submissions``: JSON, or multipart with a ``file`` (.py) and/or an ``answers`` JSON field."""
    content_type = request.headers.get("content-type", "")
    try:
        if content_type.startswith("multipart/form-data"):
            body = await _parse_multipart(request)
        elif content_type.startswith("application/json"):
            body = SubmissionCreate.model_validate_json(await request.body())
        else:
            # Also keeps cross-site "simple" requests (text/plain forms) from ever creating a submission.
            raise UnsupportedMediaType("send application/json or multipart/form-data", field="content-type")
    except ValidationError as exc:
        raise Invalid(_first_error(exc), field=".".join(str(x) for x in exc.errors()[0]["loc"])) from exc
    if body.code is not None:
        body.code = decode_source(body.code)
    return body


async def _parse_multipart(request: Request) -> SubmissionCreate:
    form = await request.form()
    data: dict[str, Any] = {k: v for k, v in form.items() if isinstance(v, str) and k != "answers"}
    upload = form.get("file")
    if isinstance(upload, UploadFile):
        data["code"] = decode_source(await upload.read(), name=upload.filename or "the file", field="file")
    answers = form.get("answers")
    if isinstance(answers, str):
        data["answers"] = parse_answers_json(answers)
    return SubmissionCreate.model_validate(data)


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(x) for x in err["loc"]) or "body"
    return f"{where}: {err['msg']}"


def web_form_input(form: FormData, problem: ProblemBase) -> tuple[dict[str, str] | None, str | None]:
    """(answers, code) from a problem's answer form on the set page, for app.submissions.service.create."""
    if kind_of(problem).takes == "code":
        return None, _code_from_form(form)
    return _answers_from_form(form, problem.part_ids()), None


def _answers_from_form(form: FormData, part_ids: list[str]) -> dict[str, str]:
    """One answer per part of the problem; checkboxes (several values) are joined as "A,C"."""
    answers: dict[str, str] = {}
    for part_id in part_ids:
        values = [v for v in form.getlist(ANSWER_PREFIX + part_id) if isinstance(v, str)]
        answers[part_id] = ",".join(v.strip() for v in values if v.strip()) if len(values) > 1 else "".join(values)
    if not any(value.strip() for value in answers.values()):
        raise Invalid("Fill in at least one answer before submitting.", field="answers")
    return answers


def _code_from_form(form: FormData) -> str:
    """The source from the uploaded .py file or, when no file was chosen, from the text box."""
    upload = form.get("file")
    pasted = form.get("code")
    text = pasted if isinstance(pasted, str) else ""
    if isinstance(upload, UploadFile) and upload.filename:
        if not upload.filename.endswith(".py"):
            raise Invalid(f"{upload.filename} is not a .py file.", field="file")
        if text.strip():
            raise Invalid("Send either a file or pasted code, not both (clear the text box or the file).", field="code")
        return decode_source(upload.file.read(), name=upload.filename, field="file")
    if not text.strip():
        raise Invalid("Choose a .py file or paste your code.", field="code")
    return decode_source(text)
