"""Code feedback a student can read: one headline, one sentence per check, the numbers behind a disclosure.

A check that gave its feedback as words (graders.words: codes with parameters) is worded in the page's language:
its headline is the sentence saying what to fix, its details the numbers; a check that waits on another says which
("needs softmax_axis first"), or, when that one passed, that it passed. Plain text (answer parts, results stored
before words existed) is shown as written, split at its first sentence.

A wrong softmax axis fails most checks with the same cause, and a syntax error repeats one message in every check:
the headline says it once, each check keeps one line, and the numeric detail (errors, indices, tolerances) is
folded away with its numbers rounded to 3 significant digits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from gettext import NullTranslations

from app.errors import N_
from app.submissions.schemas import CheckPublic
from graders.words import TEXT, parse_words

# A decimal with more digits than a reader needs: 0.123456789, 1.0000001e-05, 12345.678 (integers stay as they are).
_LONG_NUMBER = re.compile(
    r"(?<![\w.])-?\d+\.\d{4,}(?:[eE][+-]?\d+)?(?![\w.])|(?<![\w.])-?\d+(?:\.\d+)?[eE][+-]?\d+(?![\w.])"
)
# The first sentence: up to a full stop that ends a sentence (not a decimal point), a colon before detail, or a line.
_SENTENCE_END = re.compile(r"(?<=[.!?。])\s+(?=[A-Z(])|\n")


def round_numbers(text: str) -> str:
    """Numbers with many digits rounded to 3 significant digits: 0.0012345678 -> 0.00123, 1.23456e-07 -> 1.23e-07."""
    return _LONG_NUMBER.sub(lambda m: f"{float(m.group(0)):.3g}", text)


@dataclass(frozen=True)
class Line:
    sentence: str
    detail: str


@dataclass(frozen=True)
class Summary:
    headline: str
    headline_check: str
    lines: list[Line]


LONG_SENTENCE = 90  # past this, a sentence with "cause: numbers" keeps the cause and folds the numbers away


def split_feedback(text: str) -> Line:
    text = text.strip()
    match = _SENTENCE_END.search(text)
    head, rest = (text, "") if match is None else (text[: match.start()].strip(), text[match.end() :].strip())
    if len(head) > LONG_SENTENCE and ": " in head:
        head, tail = head.split(": ", 1)
        rest = f"{tail}\n{rest}".strip()
    return Line(round_numbers(head), round_numbers(rest))


# The words of a check that waits on another (graders.words.Words.needs), by the state of that other check.
NEEDS_FAILED = N_("needs %(check)s first")
NEEDS_PASSED = N_("%(check)s passed, but these points need correct results on a basic case of their own first")
NEEDS_UNKNOWN = N_("these points need correct results on a basic case first")


def _line(check: CheckPublic, by_name: dict[str, CheckPublic], tr: NullTranslations) -> Line:
    """One check's sentence and detail: from its words in the page's language, else from its English text."""
    words = parse_words(check.words)
    if words is None:
        return split_feedback(check.feedback)
    sentence = words.headline.render(tr.gettext)
    if words.needs is not None and check.passed is False:
        needed = by_name.get(words.needs)
        # Never "needs X first" under an X that passed: say that it passed, and what is still wanted.
        if needed is None or needed.passed is None:
            sentence = tr.gettext(NEEDS_UNKNOWN)
        elif needed.passed:
            sentence = tr.gettext(NEEDS_PASSED) % {"check": words.needs}
        else:
            sentence = tr.gettext(NEEDS_FAILED) % {"check": words.needs}
    # An authored headline is one sentence as written; plain text made words (graders.words.TEXT) is split as text.
    head = split_feedback(sentence) if words.headline.code == TEXT else Line(sentence, "")
    details = [d.render(tr.gettext) for d in words.details]
    return Line(head.sentence, round_numbers("\n".join([head.detail, *details]).strip()))


def waits_on_a_failure(check: CheckPublic, by_name: dict[str, CheckPublic]) -> bool:
    """Whether a failing check only waits on another failing check (its own fix is that other check's)."""
    words = parse_words(check.words)
    needed = by_name.get(words.needs) if words is not None and words.needs is not None else None
    return needed is not None and needed.passed is False


def summarize(checks: Sequence[CheckPublic], tr: NullTranslations | None = None) -> Summary:
    """The headline (the first failing check's sentence saying what to fix, or a message all failing checks share,
    said once) and each check's line, in the page's language where the check gave its words (graders.words).

    A check that waits on another failing one is not the headline: the one it waits on says what to fix.
    """
    tr = tr or NullTranslations()
    by_name = {c.name: c for c in checks}
    lines = [_line(c, by_name, tr) for c in checks]
    failing = [(c, line) for c, line in zip(checks, lines, strict=True) if c.passed is False and c.category != "manual"]
    if not failing:
        return Summary("", "", lines)
    first, first_line = next(((c, line) for c, line in failing if not waits_on_a_failure(c, by_name)), failing[0])
    shared = len(failing) > 1 and all(c.feedback == failing[0][0].feedback for c, _ in failing)
    if shared:
        # One cause for every failure (a syntax error, a missing function): say it once, not in every check.
        lines = [
            Line(tr.gettext("same as above"), "") if c.passed is False and c.feedback == first.feedback else line
            for c, line in zip(checks, lines, strict=True)
        ]
        n = len(failing)
        return Summary(
            first_line.sentence,
            tr.ngettext("all %(num)d failing checks", "all %(num)d failing checks", n) % {"num": n},
            lines,
        )
    # A failure repeating an earlier check's message (a basic case every later check needs) points back to it; a
    # check that waits on another says so itself (its line is already that short sentence).
    seen: dict[str, str] = {}
    out = []
    for c, line in zip(checks, lines, strict=True):
        waits = (words := parse_words(c.words)) is not None and words.needs is not None
        if c.passed is False and c.category != "manual" and c.feedback in seen and not waits:
            out.append(Line(tr.gettext("same cause as %(check)s") % {"check": seen[c.feedback]}, ""))
            continue
        if c.passed is False:
            seen.setdefault(c.feedback, c.name)
        out.append(line)
    return Summary(first_line.sentence, first.name, out)
