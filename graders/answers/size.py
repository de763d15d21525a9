"""Memory-size answers with units: ``4 MiB``, ``4,194,304 bytes``, ``0.5 KiB``, ``4194304 字节``, ``2^22 B``.

Arithmetic is exact (Fraction), so ``0.5 KiB`` is exactly 512 bytes and ``4 MB`` exactly 4,000,000: decimal prefixes
are powers of 1000 and binary prefixes (KiB, MiB, GiB) powers of 1024, as the SI/IEC standards define them.
"""

from __future__ import annotations

import re
from fractions import Fraction

from graders.answers.normalize import fold_width, precheck, quote, right, strip_trailing_punct, wrong
from graders.answers.specs import SizeSpec
from graders.results import PartResult

_UNITS: dict[str, int] = {
    "": 1, "b": 1, "byte": 1, "bytes": 1, "字节": 1,
    "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
    "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40,
}  # fmt: skip
# The same prefix in the other convention, to hint at a KB/KiB mix-up without giving the value away.
_OTHER_CONVENTION = {"kb": "kib", "mb": "mib", "gb": "gib", "tb": "tib", "kib": "kb", "mib": "mb", "gib": "gb"}
_OTHER_CONVENTION["tib"] = "tb"
_SPLIT_UNIT = re.compile(r"^(?P<num>.*?)\s*(?P<unit>[a-z字节]*)$", re.DOTALL)
_DECIMAL = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d{1,3})?|\.\d+", re.ASCII)
_POWER = re.compile(r"(\d{1,7})\^(\d{1,3})", re.ASCII)
_FACTOR_SEP = re.compile(r"\s*[*×x]\s*")
_VALID_UNITS = "B, KB, KiB, MB, MiB, GB, GiB"
_MAX_BYTES = 10**30  # far beyond any memory size; keeps the feedback and normalized text short


def _factor(text: str) -> Fraction | None:
    if _DECIMAL.fullmatch(text):
        return Fraction(text.replace(",", ""))
    m = _POWER.fullmatch(text)
    if m:
        return Fraction(int(m.group(1)) ** int(m.group(2)))  # at most 7-digit base, 3-digit exponent
    return None


def read_amount(text: str) -> tuple[Fraction, str] | None:
    """Read ``number [unit]`` into (amount in the unit, canonical lower-case unit), or None when unreadable.

    The number may be a product of factors, each a decimal or an integer power: ``4 * 2^20``, ``4×1024×1024``.
    """
    text = strip_trailing_punct(fold_width(text).strip()).casefold().replace("**", "^")
    m = _SPLIT_UNIT.match(text)
    if m is None or not m.group("num"):
        return None
    amount = Fraction(1)
    for part in _FACTOR_SEP.split(m.group("num")):
        factor = _factor(part)
        if factor is None:
            return None
        amount *= factor
    return amount, m.group("unit")


def _close(value: Fraction, spec: SizeSpec) -> bool:
    # rtol is a float in the spec; Fraction(float) is exact, so rtol=0 stays an exact comparison.
    return abs(value - spec.answer_bytes) <= Fraction(spec.rtol) * spec.answer_bytes


def grade_size(submitted: str, spec: SizeSpec) -> PartResult:
    """Grade a size in bytes written with or without a unit.

    Args:
        submitted: e.g. ``4 MiB``, ``4194304``, ``4,194,304 bytes``, ``0.5 KiB``, ``4 mb``, ``4194304 字节``.
        spec: the part's SizeSpec (answer_bytes, rtol; exact by default).

    Returns:
        Full credit or none; ``normalized`` is the size in bytes, e.g. ``"4194304 B"``.
    """
    rejected = precheck(submitted, limit=200)
    if rejected is not None:
        return rejected
    read = read_amount(submitted)
    reason = size_format_error(submitted, spec)
    if reason is not None or read is None:
        return wrong(reason or "")
    amount, unit = read
    value = amount * _UNITS[unit]
    if value > _MAX_BYTES:
        return wrong("that size is far too large")
    if value.denominator != 1 and spec.rtol == 0:
        return wrong("a size in bytes must be a whole number of bytes", f"{float(value):g} B")
    normalized = f"{round(value)} B"
    if _close(value, spec):
        return right(normalized)
    other = _OTHER_CONVENTION.get(unit)
    if other is not None and _close(amount * _UNITS[other], spec):
        return wrong("not the expected size: check decimal (MB = 10^6 B) versus binary (MiB = 2^20 B)", normalized)
    return wrong("not the expected size", normalized)


def size_format_error(submitted: str, spec: SizeSpec) -> str | None:
    """Why ``submitted`` is not a size at all (no amount, or a unit we do not know), or None."""
    read = read_amount(submitted)
    if read is None:
        return f"expected a size such as '2 KiB' or '2048 bytes', got {quote(submitted)}"
    if read[1] not in _UNITS:
        return f"unknown unit '{read[1][:20]}'; use one of {_VALID_UNITS} or bytes"
    return None
