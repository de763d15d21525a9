"""Feedback as stable codes with parameters, so the pages can word it in the viewer's language.

A check's feedback is stored as English text (what the API, the CLI and older pages show) and, beside it, as
``Words``: a headline (the one sentence that says what to fix), the details (the numbers and the cases) and the
check it waits on, if any. Each sentence is a ``Said``: a stable ``code``, an English ``template`` with
``%(name)s`` placeholders (the catalogs' msgid, marked with ``N_`` so ``make i18n`` extracts it) and the values.
A page translates the template and fills in the same values (app.web.feedback), as it does for domain errors.

The words carry nothing the English text does not: a template must use every parameter it is given, and a value
is a number, a short string (built like any feedback: ``TrustedText`` for what the student's code raised) or
another ``Said``. What crosses from a checker is parsed again here (``parse_words``): it is instructor code.

The bottom of graders/: it imports nothing else of the project.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

CODE = re.compile(r"[a-z][a-z0-9_]*(?:\.[a-z0-9_]+){0,5}")
# The only conversions a template may use: a named string, integer or general number, and a literal %. Widths,
# precisions and positional forms are refused, so a template cannot make a page format a gigabyte of spaces.
_PLACEHOLDER = re.compile(r"%(?:\(([a-z_][a-z0-9_]{0,30})\)[sdg]|%)")
_PERCENT = re.compile(r"%")
TEMPLATE_CHARS, VALUE_CHARS, MAX_PARAMS, MAX_DETAILS, MAX_NODES, MAX_DEPTH = 500, 500, 12, 24, 80, 4
NAME_CHARS = 100
MAX_INT_DIGITS = 30

Value = Union[str, int, float, "Said"]


def N_(message: str) -> str:
    """Marks a template for the pages' catalogs (gettext's convention; ``make i18n`` extracts it)."""
    return message


class BadWords(ValueError):
    """Words that cannot be: an unknown placeholder, a parameter the template does not use, too many, too long."""


def placeholders(template: str) -> set[str] | None:
    """The names a template fills in; None when it has a conversion other than %(name)s/d/g or %%."""
    matches = list(_PLACEHOLDER.finditer(template))
    covered = sum(2 if m.group(0) == "%%" else 1 for m in matches)  # the % signs the allowed forms account for
    if covered != len(_PERCENT.findall(template)):
        return None
    return {m.group(1) for m in matches if m.group(1)}


def _finite(value: object) -> bool:
    if type(value) is int:
        return abs(value) < 10**MAX_INT_DIGITS  # an int of any size is finite, but a long one is a long message
    return type(value) is float and math.isfinite(value)


def _checked_value(name: str, value: object, template: str) -> object:
    """The value as the template shows it: a number under %d or %g is kept as rendered (3.99 under %d is 3, and
    0.12345678912345 under %g is 0.123457), so the words never carry digits the English text does not show."""
    conversion = template[template.index(f"%({name})") + len(name) + 3]
    if conversion in "dg":
        if not _finite(value):
            raise BadWords(f"%({name}){conversion} needs a finite number")
        return int(value) if conversion == "d" else float(f"{value:g}")  # type: ignore[call-overload]
    if type(value) is str and len(value) > VALUE_CHARS:
        raise BadWords(f"the value of {name} is longer than {VALUE_CHARS} characters")
    if type(value) in (int, float) and not _finite(value):
        raise BadWords(f"the value of {name} is not a finite number of at most {MAX_INT_DIGITS} digits")
    if type(value) not in (str, int, float, Said):
        raise BadWords(f"the value of {name} is a {type(value).__name__}: a string, a number or a Said")
    return value


@dataclass(frozen=True)
class Said:
    """One sentence: its stable code, its English template (a catalog msgid) and the values it fills in.

    Args:
        code: dotted lower-case words (``attention.softmax_axis.columns``), the same however it is worded.
        template: English with ``%(name)s`` (or ``d``, ``g``) placeholders, marked with ``N_``.
        params: exactly the template's placeholders: numbers, short strings or nested ``Said``.
    """

    code: str
    template: str
    params: Mapping[str, Value] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not CODE.fullmatch(self.code):
            raise BadWords(f"a code is dotted lower-case words, not {self.code[:80]!r}")
        if len(self.template) > TEMPLATE_CHARS:
            raise BadWords(f"a template is at most {TEMPLATE_CHARS} characters")
        names = placeholders(self.template)
        if names is None:
            raise BadWords("a template may use only %(name)s, %(name)d, %(name)g and %%")
        if names != set(self.params):
            raise BadWords(f"the parameters {sorted(self.params)} are not the template's {sorted(names)}")
        if len(self.params) > MAX_PARAMS:
            raise BadWords(f"at most {MAX_PARAMS} parameters")
        checked = {name: _checked_value(name, value, self.template) for name, value in self.params.items()}
        object.__setattr__(self, "params", checked)  # frozen: set once, here
        if self.depth() > MAX_DEPTH:
            raise BadWords(f"nested more than {MAX_DEPTH} deep")

    def depth(self) -> int:
        return 1 + max((v.depth() for v in self.params.values() if isinstance(v, Said)), default=0)

    def nodes(self) -> int:
        return 1 + sum(v.nodes() for v in self.params.values() if isinstance(v, Said))

    def render(self, translate: Any = None) -> str:
        """The sentence: in English, or with ``translate`` (gettext) applied to this template and each nested one.

        A translation that does not fit the values (a catalog mistake) falls back to the English template.
        """
        values = {k: v.render(translate) if isinstance(v, Said) else v for k, v in self.params.items()}
        template = translate(self.template) if translate is not None else self.template
        try:
            return str(template % values)
        except (KeyError, ValueError, TypeError):
            return str(self.template % values)

    def english(self) -> str:
        return self.render()

    def to_wire(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "template": self.template,
            "params": {k: v.to_wire() if isinstance(v, Said) else v for k, v in self.params.items()},
        }


ELLIPSIS = Said("more", "…")


def said(code: str, template: str, **params: Value) -> Said:
    """``Said(code, template, params)`` with the values as keywords."""
    return Said(code, template, params)


@dataclass(frozen=True)
class Words:
    """One check's feedback: the headline (what to fix), the details (numbers, cases) and the check it waits on.

    ``needs`` names the check whose property this one builds on ("needs softmax_axis first"): the pages say so
    and, when that check passed, say that it passed (a basic case of this check's own still failed).
    """

    headline: Said
    details: tuple[Said, ...] = ()
    needs: str | None = None

    def __post_init__(self) -> None:
        if len(self.details) > MAX_DETAILS:
            raise BadWords(f"at most {MAX_DETAILS} details")
        if self.headline.nodes() + sum(d.nodes() for d in self.details) > MAX_NODES:
            raise BadWords(f"at most {MAX_NODES} sentences in all")
        if self.needs is not None and not (0 < len(self.needs) <= NAME_CHARS):
            raise BadWords(f"needs is a check's name of 1 to {NAME_CHARS} characters")

    @classmethod
    def fitted(cls, headline: Said, details: Sequence[Said] = (), needs: str | None = None) -> Words:
        """Words within the limits: the details that fit, in order, and "…" for the rest."""
        kept: list[Said] = []
        room = MAX_NODES - headline.nodes() - 1
        for detail in details:
            if len(kept) == MAX_DETAILS - 1 or detail.nodes() > room:
                kept.append(ELLIPSIS)
                break
            kept.append(detail)
            room -= detail.nodes()
        return cls(headline, tuple(kept), needs)

    def english(self) -> str:
        """The stored English text: the headline, then one detail a line."""
        return "\n".join([self.headline.english(), *(d.english() for d in self.details)])

    def with_details(self, *more: Said) -> Words:
        return Words(self.headline, (*self.details, *more)[:MAX_DETAILS], self.needs)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"headline": self.headline.to_wire(), "details": [d.to_wire() for d in self.details]}
        if self.needs is not None:
            wire["needs"] = self.needs
        return wire


def as_words(feedback: str | Said | Words) -> Words | None:
    """The words of a feedback value: a ``Said`` is a headline alone; plain text has none."""
    if isinstance(feedback, Words):
        return feedback
    if isinstance(feedback, Said):
        return Words(feedback)
    return None


def as_text(feedback: str | Said | Words) -> str:
    """The English text of a feedback value."""
    return feedback if isinstance(feedback, str) else feedback.english()


def _parse_said(raw: Any, depth: int = 1) -> Said:
    if type(raw) is not dict or set(raw) != {"code", "template", "params"}:
        raise BadWords("a sentence is {code, template, params}")
    code, template, params = raw["code"], raw["template"], raw["params"]
    if type(code) is not str or type(template) is not str or type(params) is not dict or depth > MAX_DEPTH:
        raise BadWords("a sentence has a string code and template and an object of parameters")
    values: dict[str, Value] = {}
    for name, value in params.items():
        if type(value) is dict:
            values[name] = _parse_said(value, depth + 1)
        elif type(value) in (str, int, float):
            values[name] = value
        else:
            raise BadWords(f"the value of {str(name)[:40]!r} is neither a string, a number nor a sentence")
    return Said(code, template, values)


def parse_words(raw: Any) -> Words | None:
    """Words from their wire (or stored) form, checked as from a stranger; None for none or for words that
    cannot be (the English text is then all there is)."""
    if raw is None:
        return None
    try:
        if type(raw) is not dict or not set(raw) <= {"headline", "details", "needs"}:
            raise BadWords("words are {headline, details, needs}")
        details = raw.get("details", [])
        needs = raw.get("needs")
        if type(details) is not list or len(details) > MAX_DETAILS or (needs is not None and type(needs) is not str):
            raise BadWords("details are a list; needs is a check's name")
        return Words(_parse_said(raw["headline"]), tuple(_parse_said(d) for d in details), needs)
    except (BadWords, KeyError, IndexError, OverflowError, ValueError):  # BadWords is a ValueError too
        return None


TEXT = "text"  # the code of a sentence given as plain text (not translated: the page shows it as written)


def text_said(text: str) -> Said:
    """Plain text as a sentence of its own (shown as written in every language), cut to ``VALUE_CHARS``."""
    text = text if len(text) <= VALUE_CHARS else text[: VALUE_CHARS - 1] + "…"
    return Said(TEXT, "%(text)s", {"text": text})


def of_text(text: str) -> Words:
    """Plain feedback as words: its first line the headline, one detail a further line (the last holds the rest)."""
    lines = text.strip().split("\n")
    head, rest = lines[0], lines[1:]
    if len(rest) > MAX_DETAILS:
        rest = [*rest[: MAX_DETAILS - 1], " ".join(rest[MAX_DETAILS - 1 :])]
    return Words(text_said(head), tuple(text_said(line) for line in rest))


def words_of(feedback: str | Said | Words) -> Words:
    """Any feedback value as words (plain text through ``of_text``)."""
    return (
        of_text(feedback) if isinstance(feedback, str) else Words(feedback) if isinstance(feedback, Said) else feedback
    )
