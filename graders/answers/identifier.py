"""Identifier answers (a function, method or class name): exact and case-sensitive, as Python itself is."""

from __future__ import annotations

import re

from graders.answers.normalize import fold_width, precheck, quote, right, wrong
from graders.answers.specs import IdentifierSpec
from graders.results import PartResult

_NAME = r"[^\W\d]\w*"
_DOTTED = re.compile(rf"{_NAME}(?:\s*\.\s*{_NAME})*")
# A dotted name optionally followed by one call with any arguments: self.model.generate(input_ids, max_new_tokens=5)
_CALL_FORM = re.compile(rf"(?P<path>{_NAME}(?:\s*\.\s*{_NAME})*)\s*(?:\(.*\))?", re.DOTALL)


def _clean(text: str) -> str:
    # NFKC is what Python applies to identifiers, so ｇｅｎｅｒａｔｅ already *is* generate to the interpreter.
    text = fold_width(text).strip()
    while text.endswith(";"):
        text = text[:-1].rstrip()
    if len(text) >= 2 and text[0] == text[-1] == "`":
        text = text.strip("`").strip()
    return text


def _path(text: str) -> list[str]:
    return [p.strip() for p in text.split(".")]


def _matches_call_form(text: str, answer: str) -> bool:
    """``generate()``, ``model.generate``, ``self.model.generate(x)`` for ``generate``: the path must end with it."""
    m = _CALL_FORM.fullmatch(text)
    if m is None:
        return False
    path, expected = _path(m.group("path")), _path(answer)
    return path[-len(expected) :] == expected


def grade_identifier(submitted: str, spec: IdentifierSpec) -> PartResult:
    """Grade a Python identifier.

    Args:
        submitted: the student's raw text; surrounding whitespace, backticks and trailing semicolons are ignored.
        spec: the part's IdentifierSpec; with ``accept_call_forms``, ``generate()``, ``model.generate`` and
            ``self.model.generate(...)`` also count for ``generate``.

    Returns:
        Full credit or none; ``normalized`` is the cleaned text.
    """
    rejected = precheck(submitted, limit=500)
    if rejected is not None:
        return rejected
    text = _clean(submitted)
    if not text:
        return wrong("no answer given")
    answer = spec.answer.strip()
    if text == answer or (spec.accept_call_forms and _matches_call_form(text, answer)):
        return right(text)
    looks_like_name = _CALL_FORM.fullmatch(text) if spec.accept_call_forms else _DOTTED.fullmatch(text)
    if not looks_like_name:
        return wrong(f"expected a Python name, got {quote(text)}", text)
    if text.casefold() == answer.casefold():
        return wrong("not the expected name: names are case-sensitive", text)
    return wrong("not the expected name", text)
