"""Unicode math as typed on phones and IMEs (√, ², ×, ÷, π, full-width digits) folded to ASCII math text."""

from __future__ import annotations

import re

from graders.answers.normalize import fold_width

_SUPERSCRIPT_CHARS = "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁽⁾"
_SUPERSCRIPT_ASCII = str.maketrans(_SUPERSCRIPT_CHARS, "0123456789+-()")
_SUPERSCRIPT_RUN = re.compile(f"[{_SUPERSCRIPT_CHARS}]+")
_OPERATORS = str.maketrans(
    {"×": "*", "·": "*", "⋅": "*", "∙": "*", "∗": "*", "÷": "/", "∕": "/", "π": " pi ", "\u2212": "-", "–": "-"}
)
# √ binds to the next parenthesised group, name or number: √(d_k), √d_k, √2.
_SQRT_GROUP = re.compile(r"√\s*(?=\()")
_SQRT_TOKEN = re.compile(r"√\s*([^\W\d]\w*|\d+(?:\.\d*)?)")


def superscripts_to_powers(text: str) -> str:
    """``x²`` -> ``x^(2)``; must run before NFKC, which would turn "d_k²" into "d_k2"."""
    return _SUPERSCRIPT_RUN.sub(lambda m: "^(" + m.group().translate(_SUPERSCRIPT_ASCII) + ")", text)


def unicode_math_to_ascii(text: str) -> str:
    """Fold Unicode math into ASCII math text.

    ``√d_k`` -> ``sqrt(d_k)``, ``x²`` -> ``x^(2)``, ``2×3`` -> ``2*3``, ``π`` -> ``pi``, full-width forms to ASCII,
    and ``^`` to ``**``. The result is still only text; safe_expr parses it under a whitelist.
    """
    text = fold_width(superscripts_to_powers(text)).translate(_OPERATORS)
    text = _SQRT_GROUP.sub("sqrt", text)
    text = _SQRT_TOKEN.sub(r"sqrt(\1)", text)
    return text.replace("^", "**")
