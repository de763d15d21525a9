"""Text normalisation and feedback helpers shared by the answer graders.

Students type answers on Chinese and English keyboards, so the same answer arrives with full-width letters,
ideographic punctuation and stray whitespace. Every grader folds these away before comparing.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache
from typing import Any

from graders.results import PartResult

NO_ANSWER = "no answer given"
# The one limit on an answer's length: a submission with a longer part is refused (422) before it is stored, and
# a grader never parses more, so nothing scales with it. Some kinds parse less (a choice label, a shape).
MAX_ANSWER_CHARS = 10_000

# Trailing sentence punctuation students add out of habit ("位置编码。", "softmax.").
_TRAILING_PUNCT = "。.,，;；、"
# NFKC leaves these as they are; map them to their ASCII counterparts by hand.
_EXTRA_FOLDS = str.maketrans({"【": "[", "】": "]", "「": '"', "」": '"', "、": ",", "\u2212": "-", "\u3000": " "})
# The Han ranges, for character classes: "[" + CJK_RANGES + "]" is one Chinese character.
CJK_RANGES = r"\u3400-\u9fff\uf900-\ufaff"
_CJK = CJK_RANGES
_HAS_CJK = re.compile(rf"[{_CJK}]")
_SPACE_NEAR_CJK = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")


@lru_cache(maxsize=1)
def _t2s() -> Any:
    # Loaded at the first text answer, not at import: the CLI's --help never needs the dictionaries.
    import opencc

    return opencc.OpenCC("t2s")


def to_simplified(text: str) -> str:
    """Traditional Chinese characters as simplified ones (OpenCC's t2s): ``解碼器`` is ``解码器``.

    Students in Taiwan and Hong Kong, and anyone whose input method is set to traditional characters, write the
    same words in the other script; OpenCC's phrase tables get the one-to-many cases (乾燥/干, 後/后) right, which a
    character table cannot. Text without Chinese characters is returned as it is, without a call.
    """
    if not _HAS_CJK.search(text):
        return text
    return str(_t2s().convert(text))


def fold_width(text: str) -> str:
    """Unicode NFKC (full-width to half-width) plus a few CJK punctuation folds NFKC leaves alone."""
    return unicodedata.normalize("NFKC", text).translate(_EXTRA_FOLDS)


def collapse_whitespace(text: str) -> str:
    """Trim and collapse every run of whitespace (including newlines) to one space."""
    return " ".join(text.split())


def strip_trailing_punct(text: str) -> str:
    """Remove trailing sentence punctuation and whitespace, e.g. ``"softmax 。"`` -> ``"softmax"``."""
    return text.rstrip(_TRAILING_PUNCT + " \t\r\n")


def normalize_text(text: str, *, case_sensitive: bool = False) -> str:
    """Canonical form used to compare free-text answers.

    NFKC, traditional Chinese as simplified, whitespace collapsed, whitespace next to Chinese characters removed
    (Chinese has no word spaces, so "位置 编码" means "位置编码"), trailing sentence punctuation stripped, and case
    folded unless case matters. Trailing punctuation is stripped before the width fold so that the ideographic "。"
    goes too.
    """
    text = strip_trailing_punct(collapse_whitespace(to_simplified(unicodedata.normalize("NFKC", text))))
    text = strip_trailing_punct(collapse_whitespace(text.translate(_EXTRA_FOLDS)))
    text = _SPACE_NEAR_CJK.sub("", text)
    return text if case_sensitive else text.casefold()


def quote(text: str, limit: int = 40) -> str:
    """Quote student input for feedback, shortened so a huge paste does not flood the page."""
    text = collapse_whitespace(text)
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return f"'{text}'"


def wrong(feedback: str, normalized: str | None = None) -> PartResult:
    """A zero-credit result."""
    return PartResult(correct=False, score=0.0, feedback=feedback, normalized=normalized)


def right(normalized: str | None, feedback: str = "correct") -> PartResult:
    """A full-credit result."""
    return PartResult(correct=True, score=1.0, feedback=feedback, normalized=normalized)


def precheck(submitted: object, limit: int = MAX_ANSWER_CHARS) -> PartResult | None:
    """Reject input no grader should parse: not a string, empty, or too long.

    Returns:
        A zero-credit result to return as is, or None when the input may be graded.
    """
    if not isinstance(submitted, str) or not submitted.strip():
        return wrong(NO_ANSWER)
    if len(submitted) > limit:
        return wrong(f"answer is too long (at most {limit} characters)")
    return None
