"""Numeric answers: a number or a simple expression, compared by tolerance or by significant figures."""

from __future__ import annotations

import math
import re

from graders.answers.equation import Equation, last_side, read_equation
from graders.answers.expr_errors import ExprError, ExprEvalError, ExprSyntaxError, ExprTooBig
from graders.answers.mathtext import superscripts_to_powers
from graders.answers.normalize import CJK_RANGES, fold_width, precheck, quote, right, strip_trailing_punct, wrong
from graders.answers.safe_expr import evaluate, parse_expression
from graders.answers.specs import NumericSpec
from graders.results import PartResult

# 1,048,576 or 1,048,576.5: commas only count as thousands separators in groups of exactly three digits.
_THOUSANDS = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\d,])")
# 1 048 576, with spaces, thin spaces (U+2009, U+202F, NBSP) or LaTeX \, between groups of exactly three digits;
# "1 048 57" or "10 48 576" are left alone (and then fail to parse, since two numbers side by side are no number).
_SPACE_SEP = r"(?:[ \u00a0\u2009\u202f]|\\,)"
_SPACED_THOUSANDS = re.compile(
    r"(?<![\d.,])(?<!\d[ \u00a0\u2009\u202f])(?<!\d\\,)"  # not the tail of a longer digit run
    rf"\d{{1,3}}(?:{_SPACE_SEP}\d{{3}})+(?:\.\d+)?(?![\d,])(?!{_SPACE_SEP}\d)"
)
_SPACE_SEP_CHARS = re.compile(_SPACE_SEP)
# "约 0.67", "≈" is read by equation.py. The tolerance decides whether a rounded value is close enough.
_APPROX = re.compile(r"^(?:约|大约|大概|approx\.?|approximately|about|~)\s*", re.IGNORECASE)
# A count with its noun: "32维", "1048576个", "64 dims". Numeral characters (万, 亿, 千, 分之) are not units: "3万"
# is not 3, so it stays unreadable rather than being graded as a wrong value.
_UNIT_WORD = re.compile(
    rf"(?<=[\d.)])\s*(?:[{CJK_RANGES}]+|(?:dims?|dimensions?|elements?|entries|entry|tokens?|heads?|parameters?))$",
    re.IGNORECASE,
)
_NUMERAL_CHARS = set("万亿千百十兆分之点倍")


def read_number(text: str) -> float:
    """Read a number or expression: ``0.67``, ``6.698e-1``, ``1,048,576``, ``1 048 576``, ``2^20``, ``2/3``, ``66.7%``.

    Raises:
        ExprError: with a student-safe message when it cannot be read or evaluated.
    """
    text = strip_trailing_punct(fold_width(superscripts_to_powers(text)).strip())
    text = _APPROX.sub("", text)
    unit = _UNIT_WORD.search(text)
    if unit is not None and not _NUMERAL_CHARS & set(unit.group()):
        text = text[: unit.start()]
    text = without_thousands_separators(text)
    scale = 1.0
    if text.endswith("%"):
        # A percentage is the fraction it names: "66.7%" is 0.667.
        text, scale = text[:-1], 0.01
    return evaluate(parse_expression(text)) * scale


def without_thousands_separators(text: str) -> str:
    """``1,048,576`` and ``1 048 576`` (also with thin spaces or LaTeX ``\\,``) as ``1048576``."""
    text = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), text)
    return _SPACED_THOUSANDS.sub(lambda m: _SPACE_SEP_CHARS.sub("", m.group()), text)


def _equation(submitted: str, spec: NumericSpec) -> Equation:
    def earns(side: str) -> bool | None:
        try:
            return matches(read_number(side), spec)
        except ExprError:
            return None  # not a number: a label such as "d/H"

    return read_equation(submitted, spec.names, earns)


def round_sig(x: float, sig_figs: int) -> float:
    """Round to ``sig_figs`` significant figures (0 stays 0)."""
    return float(f"{x:.{sig_figs - 1}e}")


def matches(value: float, spec: NumericSpec) -> bool:
    """Whether a finite value earns the part: by significant figures when set, else |x-a| <= atol + rtol*|a|."""
    if not math.isfinite(value):
        return False
    if spec.sig_figs is not None:
        # Rounding both sides means extra correct digits are fine ("0.66976" for 0.670 at 3 figures).
        return round_sig(value, spec.sig_figs) == round_sig(spec.answer, spec.sig_figs)
    return abs(value - spec.answer) <= spec.atol + spec.rtol * abs(spec.answer)


def format_number(value: float) -> str:
    """Canonical text of a parsed number: ``0.67``, ``1048576``, ``0.666666666667``."""
    return f"{value:.12g}"


def grade_numeric(submitted: str, spec: NumericSpec) -> PartResult:
    """Grade a numeric answer.

    Accepts plain numbers, scientific notation, thousands separators, percentages, full-width digits and simple
    expressions (``2^20``, ``2/3``, ``exp(1/sqrt(2))/(exp(1/sqrt(2))+1)``) read by the safe evaluator.

    Args:
        submitted: the student's raw text.
        spec: the part's NumericSpec (answer, rtol/atol, or sig_figs).

    Returns:
        Full credit or none; ``normalized`` is the value read, e.g. ``"0.67"``.
    """
    rejected = precheck(submitted)
    if rejected is not None:
        return rejected
    equation = _equation(submitted, spec)
    if equation.refusal is not None:
        return wrong(equation.refusal)
    submitted = equation.value
    try:
        value = read_number(submitted)
    except ExprSyntaxError:
        return wrong(_not_a_number(submitted))
    except (ExprTooBig, ExprEvalError) as err:
        return wrong(f"could not evaluate this expression: {err}")
    normalized = format_number(value)
    if matches(value, spec):
        return right(normalized)
    if spec.sig_figs is not None:
        return wrong(f"not the expected value (compared to {spec.sig_figs} significant figures)", normalized)
    return wrong("not the expected value", normalized)


def _not_a_number(submitted: str) -> str:
    return f"expected a number, got {quote(submitted)}"


def numeric_format_error(submitted: str, spec: NumericSpec) -> str | None:
    """Why ``submitted`` cannot be read as a number at all (a format error, not a wrong answer), or None."""
    submitted = last_side(submitted)
    try:
        read_number(submitted)
    except ExprSyntaxError:
        return _not_a_number(submitted)
    except (ExprTooBig, ExprEvalError):
        return None  # it parses; the grader explains what is wrong with its value
    return None
