"""The one input path of a submission: the API body (JSON or multipart), the web form and the CLI all read answers
and source here, so a file grades the same whichever way it arrives.

Source is decoded one way everywhere: strict UTF-8 (an invalid byte is a 422 naming its offset), a leading BOM
dropped, CRLF and lone CR line ends turned into LF (what Windows editors and browsers' text boxes send). A Jupyter
notebook (.ipynb) becomes the source of its code cells here (app.submissions.notebook), on every path alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request

from app.errors import N_, Invalid, UnsupportedMediaType
from app.submissions.notebook import is_notebook, source_from_notebook
from app.submissions.schemas import SubmissionCreate
from graders.input_limits import NUL, NUL_MESSAGE, InputTooComplex, loads_json
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
                N_("%(name)s is not UTF-8 text: byte %(byte)s at offset %(offset)s cannot be decoded; save the file "
                   "as UTF-8"),
                field=field, params={"name": name, "byte": f"0x{data[exc.start]:02x}", "offset": exc.start},
            ) from exc  # fmt: skip
    else:
        text = data
    if NUL in text:
        raise Invalid(f"{name} {NUL_MESSAGE}", field=field)
    return text.removeprefix(_BOM).replace("\r\n", "\n").replace("\r", "\n")


def uploaded_source(data: bytes, *, name: str, problem: ProblemBase | str | None = None) -> str:
    """The source of an uploaded file: a .py file decoded, or a notebook's code cells (checked for the entry
    points when the problem is known here; app.submissions.service checks them otherwise)."""
    if not is_notebook(name):
        return decode_source(data, name=name, field="file")
    if isinstance(problem, ProblemBase):
        entrypoints: list[str] | None = list(getattr(problem, "entrypoints", None) or [])
        return source_from_notebook(data, name=name, problem_id=problem.id, entrypoints=entrypoints).source
    return source_from_notebook(data, name=name, problem_id=problem).source


def read_source_file(path: Path, problem: ProblemBase | str | None = None) -> str:
    """A .py file or a notebook for the CLI, read like an upload; raises Invalid when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise Invalid(f"cannot read {path}: {exc.strerror}", field="file") from exc
    return uploaded_source(data, name=str(path), problem=problem)


def parse_answers_json(text: str, *, field: str = "answers") -> dict[str, str]:
    """A JSON object of part id -> text (a multipart ``answers`` field, the CLI's ``--answers``)."""
    try:
        parsed = loads_json(text, what=field)
    except json.JSONDecodeError as exc:
        raise Invalid(f"{field} is not valid JSON: {exc.msg}", field=field) from exc
    except InputTooComplex as exc:
        raise Invalid(str(exc), field=field) from exc
    if not isinstance(parsed, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in parsed.items()):
        raise Invalid(f'{field} must be a JSON object of strings, e.g. {{"b1": "V"}}', field=field)
    if any(NUL in k or NUL in v for k, v in parsed.items()):
        raise Invalid(f"{field} {NUL_MESSAGE}", field=field)
    return parsed


async def parse_api_body(request: Request) -> SubmissionCreate:
    """``POST /submissions``: JSON, or multipart with a ``file`` (.py) and/or an ``answers`` JSON field."""
    content_type = request.headers.get("content-type", "")
    try:
        if content_type.startswith("multipart/form-data"):
            body = await _parse_multipart(request)
        elif content_type.startswith("application/json"):
            body = SubmissionCreate.model_validate(_json_body(await request.body()))
        else:
            # Also keeps cross-site "simple" requests (text/plain forms) from ever creating a submission.
            raise UnsupportedMediaType(
                "send application/json or multipart/form-data", field="content-type", location="header"
            )
    except ValidationError as exc:  # the same 422 items FastAPI gives for the bodies it parses itself
        raise RequestValidationError(
            [{"loc": ("body", *e["loc"]), "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
        ) from exc
    if body.code is not None:
        body.code = decode_source(body.code)
    return body


def _json_body(raw: bytes) -> Any:
    try:
        return loads_json(raw, what="the JSON body")
    except json.JSONDecodeError as exc:
        raise Invalid(f"the body is not valid JSON: {exc.msg} at offset {exc.pos}", field="") from exc
    except (InputTooComplex, UnicodeDecodeError) as exc:
        raise Invalid(str(exc) if isinstance(exc, InputTooComplex) else "the body is not UTF-8", field="") from exc


_MULTIPART_FIELDS = ("problem_set", "problem", "offering", "file", "answers", "source")


async def _parse_multipart(request: Request) -> SubmissionCreate:
    form = await request.form(max_fields=len(_MULTIPART_FIELDS) + 10, max_files=2)
    for name in form:
        if name not in _MULTIPART_FIELDS:
            raise Invalid(f"unknown field {name[:64]!r}; expected some of {list(_MULTIPART_FIELDS)}", field=name[:64])
        if len(form.getlist(name)) > 1:
            raise Invalid(f"{name} was sent more than once; send it once", field=name)
    data: dict[str, Any] = {k: v for k, v in form.items() if isinstance(v, str) and k != "answers"}
    upload = form.get("file")
    if isinstance(upload, UploadFile):
        problem = data.get("problem")
        data["code"] = uploaded_source(await upload.read(), name=upload.filename or "the file", problem=problem)
    answers = form.get("answers")
    if isinstance(answers, str):
        data["answers"] = parse_answers_json(answers)
    return SubmissionCreate.model_validate(data)


def web_form_input(form: FormData, problem: ProblemBase) -> tuple[dict[str, str] | None, str | None]:
    """(answers, code) from a problem's answer form on the set page, for app.submissions.service.create."""
    if kind_of(problem).takes == "code":
        return None, _code_from_form(form, problem)
    return _answers_from_form(form, problem.part_ids()), None


def _answers_from_form(form: FormData, part_ids: list[str]) -> dict[str, str]:
    """One answer per part of the problem; checkboxes (several values) are joined as "A,C"."""
    answers: dict[str, str] = {}
    for part_id in part_ids:
        values = [v for v in form.getlist(ANSWER_PREFIX + part_id) if isinstance(v, str)]
        answers[part_id] = ",".join(v.strip() for v in values if v.strip()) if len(values) > 1 else "".join(values)
    if not any(value.strip() for value in answers.values()):
        raise Invalid(N_("Fill in at least one answer before submitting."), field="answers")
    return answers


def _code_from_form(form: FormData, problem: ProblemBase) -> str:
    """The source from the uploaded .py file or notebook or, when no file was chosen, from the text box."""
    upload = form.get("file")
    pasted = form.get("code")
    text = pasted if isinstance(pasted, str) else ""
    if isinstance(upload, UploadFile) and upload.filename:
        if not (upload.filename.endswith(".py") or is_notebook(upload.filename)):
            raise Invalid(N_("%(name)s is not a .py file or a notebook (.ipynb)."), field="file",
                          params={"name": upload.filename})  # fmt: skip
        if text.strip():
            raise Invalid(N_("Send either a file or pasted code, not both (clear the text box or the file)."),
                          field="code")  # fmt: skip
        return uploaded_source(upload.file.read(), name=upload.filename, problem=problem)
    if not text.strip():
        raise Invalid(N_("Choose a .py file or a notebook, or paste your code."), field="code")

    return decode_source(text)
