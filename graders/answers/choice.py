"""Single and multiple choice: read the labels a student picked, however they wrote them, then score.

Partial credit (scheme ``per_option``, multi only) is

    credit = max(0, (#correct picked - penalty * #wrong picked) / #correct options)

so picking every correct option and nothing else earns 1, each missed option costs 1/#correct, and each wrong
option picked costs ``penalty``/#correct (with the default penalty 1, "pick everything" earns nothing unless all
options are correct).
"""

from __future__ import annotations

import re

from graders.answers.normalize import fold_width, precheck, right, wrong
from graders.answers.specs import ChoiceSpec
from graders.results import PartResult

# Wrappers and trailing marks around labels: "(B)", "（B）", "[A, C]", "B.", "B、", "【B】".
_DECORATION = re.compile(r"[()\[\]{}.。:：]")
_SEPARATORS = re.compile(r"[\s,;/&+|]+|和|与|以及|\band\b", re.IGNORECASE)


def _tokens(text: str) -> list[str]:
    # fold_width maps "、" to "," and full-width letters/brackets to ASCII.
    cleaned = _DECORATION.sub(" ", fold_width(text))
    return [t for t in _SEPARATORS.split(cleaned) if t]


def _read_labels(text: str, options: list[str]) -> tuple[list[str], list[str]]:
    """Map the student's tokens to option labels.

    Returns:
        (labels picked, in option order without repeats; tokens that are not labels).
    """
    by_key = {o.strip().casefold(): o for o in options}
    single_chars = all(len(k) == 1 for k in by_key)
    picked: set[str] = set()
    unknown: list[str] = []
    for token in _tokens(text):
        key = token.casefold()
        if key in by_key:
            picked.add(by_key[key])
        elif single_chars and all(c in by_key for c in key):
            # "AC" for A and C, when every label is one character long.
            picked.update(by_key[c] for c in key)
        else:
            unknown.append(token)
    return [o for o in options if o in picked], unknown


def _score(picked: list[str], spec: ChoiceSpec) -> float:
    answer = set(spec.answer)
    hits = sum(1 for p in picked if p in answer)
    misses = len(picked) - hits
    if spec.scheme == "all_or_nothing" or not spec.multi:
        return 1.0 if set(picked) == answer else 0.0
    return max(0.0, (hits - spec.penalty * misses) / len(answer))


def grade_choice(submitted: str, spec: ChoiceSpec) -> PartResult:
    """Grade a single- or multiple-choice answer.

    Accepts ``B``, ``b``, ``Ｂ``, ``(B)``, ``（B）``, ``B.``, ``B、`` and, for multi, ``A,C``, ``AC``, ``A C``,
    ``A，C``, ``[A, C]``. Scoring follows the module docstring.

    Args:
        submitted: the student's raw text.
        spec: the part's ChoiceSpec.

    Returns:
        The credit; ``normalized`` is the picked labels in option order joined by commas, e.g. ``"A,C"``.
    """
    rejected = precheck(submitted, limit=200)
    if rejected is not None:
        return rejected
    picked, unknown = _read_labels(submitted, spec.options)
    valid = ", ".join(spec.options)
    if unknown:
        return wrong(f"unknown option '{unknown[0][:20]}'; valid options are {valid}")
    if not picked:
        return wrong("no answer given")
    normalized = ",".join(picked)
    if not spec.multi and len(picked) > 1:
        return wrong("pick one option", normalized)
    score = _score(picked, spec)
    if score >= 1.0:
        return right(normalized)
    if score > 0:
        return PartResult(correct=False, score=score, feedback="partially correct", normalized=normalized)
    return wrong("not correct", normalized)
