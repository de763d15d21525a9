"""Free-text answers: aliases, an optional full-match regex, or required keywords, compared after normalisation."""

from __future__ import annotations

import re
from functools import lru_cache

from graders.answers.normalize import normalize_text, precheck, right, wrong
from graders.answers.specs import TextSpec
from graders.results import PartResult

# Markup a symbol is written in: $V$, \mathbf{V}, \boldsymbol{V}, **V**, and the noun after or before it (V矩阵).
_MATH_DOLLARS = re.compile(r"^\$+(.*?)\$+$", re.DOTALL)
_STYLE_COMMAND = re.compile(
    r"\\(?:mathbf|boldsymbol|bm|mathrm|mathit|mathsf|text|textbf|textit|operatorname)\{([^{}]*)\}"
)
_MARKDOWN_BOLD = re.compile(r"^(\*\*|__|\*|`)(.+?)\1$")
_NOUN = re.compile(
    r"^(?:(?:矩阵|向量|张量)\s*(?P<after>.+)|(?P<before>.+?)\s*(?:矩阵|向量|张量|matrix|vector|tensor))$", re.I
)


def strip_symbol_markup(text: str) -> str:
    """The symbol inside its markup: ``$\\mathbf{V}$``, ``\\boldsymbol{V}``, ``**V**`` and ``V矩阵`` are ``V``."""
    text = text.strip()
    for _ in range(3):  # $\mathbf{V}$ nests two
        before = text
        text = _MATH_DOLLARS.sub(r"\1", text).strip()
        text = _STYLE_COMMAND.sub(r"\1", text).strip()
        text = _MARKDOWN_BOLD.sub(r"\2", text).strip()
        if text == before:
            break
    noun = _NOUN.match(text)
    if noun is not None:
        text = (noun.group("after") or noun.group("before") or text).strip()
    return text


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
    if spec.case_sensitive:
        # A symbol (V, Q, K^T) compared by case: the same symbol in bold or in $...$ is still that symbol.
        bare = normalize_text(strip_symbol_markup(submitted), case_sensitive=True)
        if bare != text and bare in _aliases(spec):
            return right(bare)
    if spec.case_sensitive and normalize_text(submitted) in {normalize_text(a) for a in spec.answers}:
        return wrong("not the expected answer: check the capitalisation (this answer is case-sensitive)", text)
    return wrong("not the expected answer", text)
