"""Answers written as an equation: ``d/H = 32``, ``E(S)=0``, ``4 MiB = 4194304 B``, ``≈ 0.6698``.

Students show their working: they name the quantity, or give the value in two forms, before the value itself. The
last side is the answer. Every other side is either a value of the blank's kind, which must earn the part too
(``2/3 = 0.5`` is wrong, however right ``2/3`` is), or a label, which must name what the blank asks for when the
part lists its ``names`` (``H = 32`` for a blank that asks for d/H is refused, with a message saying so).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from graders.answers.normalize import fold_width, quote

# = and the approximate signs; after NFKC the full-width ＝ is =. "≈0.6698" is an equation with an empty left side.
# "!=", "<=" and ">=" are no equations: such an answer stays what it was (unreadable, or a wrong formula).
_EQUALS = re.compile(r"\s*(?:(?<![!<>=])==?(?!=)|≈|≃|≅|≒)\s*")
# Words that label an answer without naming a quantity: nothing for a part's names to refuse.
_GENERIC_LABELS = {"answer", "ans", "答案", "答", "结果", "result", "shape", "形状", "size", "大小", "value", "值"}
# A label is compared without spaces, $ and braces, and with [] read as (): "E[S]" names what "E(S)" names.
_LABEL_NOISE = re.compile(r"[\s$]|\\[,;!: ]|\\(?:mathrm|operatorname|text|mathbf|boldsymbol)\b|[{}]")
_MAX_SIDES = 8


@dataclass(frozen=True)
class Equation:
    """What an answer says: the value to grade, and why it must be refused (``refusal``), if it must."""

    value: str
    refusal: str | None = None


def label_key(label: str) -> str:
    """The form in which a label and a part's ``names`` are compared."""
    return _LABEL_NOISE.sub("", fold_width(label)).replace("[", "(").replace("]", ")")


def last_side(submitted: str) -> str:
    """The value an equation ends with (the whole text when it has no equals sign), without checking the rest."""
    return _EQUALS.split(submitted.strip())[-1] if _EQUALS.search(submitted) else submitted


def read_equation(submitted: str, names: Sequence[str], earns: Callable[[str], bool | None]) -> Equation:
    """Split ``submitted`` at its equals signs and check every side but the last.

    Args:
        submitted: the student's raw text.
        names: what the blank asks for, as students write it (the part's ``names``); empty: any label is read as
            a label and passed over.
        earns: for one side, whether it is a value of the blank's kind that earns the part (True), one that does
            not (False), or no value of that kind at all, so a label (None).

    Returns:
        The last side as the value; ``refusal`` is set when another side is a wrong value or a label that names
        something the blank does not ask for.
    """
    sides = _EQUALS.split(submitted.strip())
    if len(sides) == 1:
        return Equation(submitted)
    if len(sides) > _MAX_SIDES:
        return Equation(sides[-1], "too many '=' in one answer: give the value")
    value = sides[-1]
    keys = {label_key(n) for n in names}
    for side in sides[:-1]:
        if not side.strip():
            continue  # "≈ 0.67", "= 32": a sign with nothing before it
        verdict = earns(side)
        if verdict is True:
            continue
        if verdict is False:
            return Equation(value, f"the side {quote(side)} of your equation is not right")
        key = label_key(side)
        if keys and key not in keys and key.casefold() not in _GENERIC_LABELS:
            asked = " or ".join(quote(n, 20) for n in names[:3])
            return Equation(value, f"{quote(side)} is not what this blank asks for: it asks for {asked}")
    return Equation(value)
