"""Memory-size answers with units: ``4 MiB``, ``4,194,304 bytes``, ``0.5 KiB``, ``4194304 字节``, ``32 Mib``.

Arithmetic is exact (Fraction), so ``0.5 KiB`` is exactly 512 bytes and ``4 MB`` exactly 4,000,000: decimal prefixes
are powers of 1000 and binary prefixes (KiB, MiB, GiB) powers of 1024, as the SI/IEC standards define them.
"""

from __future__ import annotations

import re
from fractions import Fraction

from graders.answers.equation import Equation, last_side, read_equation
from graders.answers.normalize import fold_width, precheck, quote, right, strip_trailing_punct, wrong
from graders.answers.numeric import without_thousands_separators
from graders.answers.specs import SizeSpec
from graders.results import PartResult

# Units by case, as IEC 80000-13 writes them: B is a byte and b a bit ("4194304 b" is half a MiB, "32 Mib" is 4 MiB).
# Only the prefix letter's case is forgiven (kB and KB are both 1000 bytes), since nobody means milli-bytes.
_BYTE_WORDS = {"", "B", "byte", "bytes", "Byte", "Bytes", "BYTE", "BYTES", "字节"}
_BIT_WORDS = {"b", "bit", "bits", "Bit", "Bits", "BIT", "BITS", "比特", "位"}
_PREFIXES = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12, "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}
_UNIT = re.compile(r"^(?P<prefix>[kKmMgGtT](?:i|I)?)?(?P<base>[^\W\d_]*)$")
_SPLIT_UNIT = re.compile(r"^(?P<num>.*?)\s*(?P<unit>[a-zA-Z字节比特位]*)$", re.DOTALL)
_DECIMAL = re.compile(r"(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d{1,3})?|\.\d+", re.ASCII | re.IGNORECASE)
_POWER = re.compile(r"(\d{1,7})\^(\d{1,3})", re.ASCII)
_FACTOR_SEP = re.compile(r"\s*(?:[*×xX]|\\times|\\cdot)\s*")
_LATEX_SPACE = re.compile(r"\\[,;:! ]")
_TEXT_COMMAND = re.compile(r"\\(?:text|mathrm)\{([^{}]*)\}")
_VALID_UNITS = "B, KB, KiB, MB, MiB, GB, GiB (b for bits)"
_MAX_BYTES = 10**30  # far beyond any memory size; keeps the feedback and normalized text short


def _factor(text: str) -> Fraction | None:
    if _DECIMAL.fullmatch(text):
        return Fraction(text.replace(",", ""))
    m = _POWER.fullmatch(text)
    if m:
        return Fraction(int(m.group(1)) ** int(m.group(2)))  # at most 7-digit base, 3-digit exponent
    return None


def canonical_unit(unit: str) -> str | None:
    """``MiB``, ``KB``, ``Mib``, ``B`` or ``b`` for a unit as typed (``mib`` is ``Mib``, ``字节`` is ``B``), or None."""
    m = _UNIT.match(unit)
    candidates = [("", unit)]
    if m is not None and m.group("prefix"):
        candidates.insert(0, (m.group("prefix"), m.group("base")))
    for prefix, base in candidates:
        if base in _BYTE_WORDS:
            suffix = "B"
        elif base in _BIT_WORDS:
            suffix = "b"
        else:
            continue
        if prefix and not base:
            continue  # "4 M": a prefix alone says neither bits nor bytes
        letter = prefix[:1].upper() if prefix[:1].lower() != "k" else "K"
        return letter + ("i" if len(prefix) == 2 else "") + suffix
    return None


def unit_bytes(unit: str) -> Fraction:
    """How many bytes one canonical unit is: ``MiB`` is 2^20, ``Mib`` 2^17, ``b`` 1/8."""
    prefix, base = unit[:-1].lower(), unit[-1]
    return Fraction(_PREFIXES[prefix], 8 if base == "b" else 1)


def read_amount(text: str) -> tuple[Fraction, str] | None:
    """Read ``number [unit]`` into (amount in the unit, the unit as typed), or None when unreadable.

    The number may be a product of factors, each a decimal or an integer power: ``4 * 2^20``, ``4×1024×1024``,
    with thousands separators (``4,194,304``, ``4\\,194\\,304``); LaTeX's ``$`` and ``\\text{}`` are dropped.
    """
    text = strip_trailing_punct(fold_width(text).strip()).replace("**", "^").replace("$", "")
    text = _TEXT_COMMAND.sub(r"\1", text)
    text = _LATEX_SPACE.sub(" ", without_thousands_separators(text))
    m = _SPLIT_UNIT.match(text)
    if m is None or not m.group("num"):
        return None
    amount = Fraction(1)
    for part in _FACTOR_SEP.split(m.group("num").strip()):
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
        submitted: e.g. ``4 MiB``, ``4194304``, ``4,194,304 bytes``, ``0.5 KiB``, ``4 MB``, ``4194304 字节``,
            ``32 Mib`` (bits), ``4 MiB = 4194304 B``.
        spec: the part's SizeSpec (answer_bytes, rtol; exact by default).

    Returns:
        Full credit or none; ``normalized`` is the size in bytes, e.g. ``"4194304 B"``.
    """
    rejected = precheck(submitted, limit=200)
    if rejected is not None:
        return rejected
    equation = _equation(submitted, spec)
    if equation.refusal is not None:
        return wrong(equation.refusal)
    submitted = equation.value
    read = read_amount(submitted)
    unit = canonical_unit(read[1]) if read is not None else None
    if read is None or unit is None:
        return wrong(size_format_error(submitted, spec) or "")
    amount = read[0]
    value = amount * unit_bytes(unit)
    if value > _MAX_BYTES:
        return wrong("that size is far too large")
    if value.denominator != 1 and spec.rtol == 0:
        return wrong("a size in bytes must be a whole number of bytes", f"{float(value):g} B")
    normalized = f"{round(value)} B"
    if _close(value, spec):
        return right(normalized)
    for other, hint in _other_readings(unit):
        if _close(amount * unit_bytes(other), spec):
            return wrong(f"not the expected size: {hint}", normalized)
    return wrong("not the expected size", normalized)


def _other_readings(unit: str) -> list[tuple[str, str]]:
    """The units a student may have meant instead, each with the hint that names the mix-up (not the value)."""
    prefix, base = unit[:-1], unit[-1]
    readings = []
    if len(prefix) == 1:
        readings.append((prefix + "i" + base, "check decimal (MB = 10^6 B) versus binary (MiB = 2^20 B)"))
    elif len(prefix) == 2:
        readings.append((prefix[0] + base, "check decimal (MB = 10^6 B) versus binary (MiB = 2^20 B)"))
    other_base = "B" if base == "b" else "b"
    readings.append((prefix + other_base, "check bits versus bytes (b is a bit, B is a byte: 8 b = 1 B)"))
    return readings


def _equation(submitted: str, spec: SizeSpec) -> Equation:
    def earns(side: str) -> bool | None:
        read = read_amount(side)
        unit = canonical_unit(read[1]) if read is not None else None
        if read is None or unit is None:
            return None
        return _close(read[0] * unit_bytes(unit), spec)

    return read_equation(submitted, spec.names, earns)


def size_format_error(submitted: str, spec: SizeSpec) -> str | None:
    """Why ``submitted`` is not a size at all (no amount, or a unit we do not know), or None."""
    read = read_amount(last_side(submitted))
    if read is None:
        return f"expected a size such as '2 KiB' or '2048 bytes', got {quote(submitted)}"
    if canonical_unit(read[1]) is None:
        return f"unknown unit '{read[1][:20]}'; use one of {_VALID_UNITS} or bytes"
    return None
