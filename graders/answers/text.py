"""Free-text answers: aliases, an optional full-match regex, or required keywords, compared after normalisation."""

from __future__ import annotations

import re
from functools import lru_cache

from graders.answers.normalize import normalize_text, precheck, right, wrong
from graders.answers.specs import TextSpec
from graders.results import PartResult


@lru_cache(maxsize=256)
def _compiled(pattern: str, case_sensitive: bool) -> re.Pattern[str]:
    # The pattern is the instructor's (trusted); a broken one raises re.error, which is a problem-set bug.
    return re.compile(pattern, 0 if case_sensitive else re.IGNORECASE)


def _aliases(spec: TextSpec) -> set[str]:
    return {normalize_text(a, case_sensitive=spec.case_sensitive) for a in spec.answers}


def _has_keywords(text: str, spec: TextSpec) -> bool:
    # Substring match, not word match: Chinese has no word boundaries ("多头注意力机制" contains "注意力").
    keywords = [normalize_text(k, case_sensitive=spec.case_sensitive) for k in spec.keywords or []]
    return bool(keywords) and all(k in text for k in keywords)


def grade_text(submitted: str, spec: TextSpec) -> PartResult:
    """Grade a free-text answer.

    Both the answer and every alias are normalised (NFKC, whitespace collapsed, trailing 。.,， stripped, case folded
    unless ``spec.case_sensitive``). The answer is accepted when it equals an alias, fully matches ``spec.regex``,
    or contains every one of ``spec.keywords``.

    Args:
        submitted: the student's raw text.
        spec: the part's TextSpec.

    Returns:
        Full credit or none; ``normalized`` is the normalised answer.
    """
    rejected = precheck(submitted)
    if rejected is not None:
        return rejected
    text = normalize_text(submitted, case_sensitive=spec.case_sensitive)
    if not text:
        return wrong("no answer given")
    if text in _aliases(spec):
        return right(text)
    if spec.regex is not None and _compiled(spec.regex, spec.case_sensitive).fullmatch(text):
        return right(text)
    if _has_keywords(text, spec):
        return right(text)
    if spec.case_sensitive and normalize_text(submitted) in {normalize_text(a) for a in spec.answers}:
        return wrong("not the expected answer: check the capitalisation (this answer is case-sensitive)", text)
    return wrong("not the expected answer", text)
