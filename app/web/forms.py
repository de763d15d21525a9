"""Reading the answer and code forms of a problem page into what app.submissions.service.create takes."""

from __future__ import annotations

from typing import Any

from starlette.datastructures import FormData, UploadFile

from app.errors import Invalid

ANSWER_PREFIX = "answer."


def answers_from_form(form: FormData, parts: list[dict[str, Any]]) -> dict[str, str]:
    """One answer per part of the problem; checkboxes (several values) are joined as "A,C"."""
    answers: dict[str, str] = {}
    for part in parts:
        values = [v for v in form.getlist(ANSWER_PREFIX + part["id"]) if isinstance(v, str)]
        answers[part["id"]] = ",".join(v.strip() for v in values if v.strip()) if len(values) > 1 else "".join(values)
    if not any(value.strip() for value in answers.values()):
        raise Invalid("Fill in at least one answer before submitting.", field="answers")
    return answers


def code_from_form(form: FormData) -> str:
    """The source from the uploaded .py file or, when no file was chosen, from the text box."""
    upload = form.get("file")
    pasted = form.get("code")
    text = pasted if isinstance(pasted, str) else ""
    if isinstance(upload, UploadFile) and upload.filename:
        if not upload.filename.endswith(".py"):
            raise Invalid(f"{upload.filename} is not a .py file.", field="file")
        if text.strip():
            raise Invalid("Send either a file or pasted code, not both (clear the text box or the file).", field="code")
        raw = upload.file.read()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise Invalid(
                f"{upload.filename} is not UTF-8 text (byte {exc.start}); save it as UTF-8.", field="file"
            ) from exc
    if not text.strip():
        raise Invalid("Choose a .py file or paste your code.", field="code")
    # Browsers send textarea line breaks as CRLF; Python does not mind, but the stored source should read as typed.
    return text.replace("\r\n", "\n")
