"""How a blank's text was read, before it is submitted: the parsed value as LaTeX for KaTeX, or the parse error.

Each preview parses with the same trusted readers the graders use (``parse_expression``, ``read_grid``,
``read_shape``, ``read_amount``, ``read_number``): nothing is evaluated with eval or SymPy, and nothing here compares
with the answer, so a preview never tells right from wrong.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from fractions import Fraction

from graders.answers.expr_errors import ExprError
from graders.answers.matrix import MatrixSyntaxError, _values, read_grid
from graders.answers.normalize import MAX_ANSWER_CHARS
from graders.answers.numeric import format_number, read_number
from graders.answers.safe_expr import CONSTANTS, parse_expression
from graders.answers.shape import read_shape
from graders.answers.size import _VALID_UNITS, canonical_unit, read_amount
from graders.answers.specs import MatrixSpec, NumericSpec, ShapeSpec, SizeSpec, SymbolicSpec


@dataclass(frozen=True)
class Preview:
    """``latex`` is what KaTeX shows; ``error`` says why the text cannot be read (then ``latex`` is empty)."""

    latex: str = ""
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


def _too_long(text: str) -> Preview | None:
    return Preview(error=f"longer than {MAX_ANSWER_CHARS} characters") if len(text) > MAX_ANSWER_CHARS else None


_PRECEDENCE = {ast.Add: 1, ast.Sub: 1, ast.Mult: 2, ast.Div: 2, ast.Pow: 4}
_FUNCTIONS = {"exp": r"\exp", "log": r"\log", "ln": r"\ln", "sin": r"\sin", "cos": r"\cos", "tan": r"\tan"}


def _name(name: str) -> str:
    if name in CONSTANTS:
        return r"\pi" if name == "pi" else "e"
    base, _, sub = name.partition("_")
    base = base if len(base) == 1 else rf"\mathrm{{{base}}}"
    return f"{base}_{{{sub}}}" if sub else base


def expr_latex(node: ast.expr, parent: int = 0) -> str:
    """LaTeX of a tree from parse_expression (only the nodes its validator lets through)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return _number_latex(float(node.value))
    if isinstance(node, ast.Name):
        return _name(node.id)
    if isinstance(node, ast.UnaryOp):
        inner = "-" + expr_latex(node.operand, 3) if isinstance(node.op, ast.USub) else expr_latex(node.operand, 3)
        return f"\\left({inner}\\right)" if parent >= 3 else inner
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        arg = expr_latex(node.args[0])
        if node.func.id == "sqrt":
            return rf"\sqrt{{{arg}}}"
        return rf"{_FUNCTIONS.get(node.func.id, node.func.id)}\left({arg}\right)"
    if isinstance(node, ast.BinOp):
        op = type(node.op)
        if op is ast.Div:
            return rf"\frac{{{expr_latex(node.left)}}}{{{expr_latex(node.right)}}}"
        mine = _PRECEDENCE[op]
        if op is ast.Pow:
            text = f"{{{expr_latex(node.left, 5)}}}^{{{expr_latex(node.right)}}}"
        else:
            symbol = {ast.Add: " + ", ast.Sub: " - ", ast.Mult: r" \cdot "}[op]
            # The right operand of - binds tighter: a - (b + c) keeps its brackets.
            text = expr_latex(node.left, mine) + symbol + expr_latex(node.right, mine + (op is ast.Sub))
        return f"\\left({text}\\right)" if mine < parent else text
    raise ExprError("cannot show this expression")  # unreachable for validated trees


def preview_symbolic(text: str, spec: SymbolicSpec) -> Preview:
    try:
        return _too_long(text) or Preview(latex=expr_latex(parse_expression(text, spec.symbols, big_o=True)))
    except ExprError as err:
        return Preview(error=str(err))


def _number_latex(value: float) -> str:
    text = format_number(value)
    mantissa, e, exponent = text.partition("e")
    return rf"{mantissa} \times 10^{{{int(exponent)}}}" if e else text


def preview_numeric(text: str, spec: NumericSpec) -> Preview:
    try:
        return _too_long(text) or Preview(latex=_number_latex(read_number(text)))
    except ExprError as err:
        return Preview(error=str(err))


def preview_matrix(text: str, spec: MatrixSpec) -> Preview:
    try:
        long = _too_long(text)
        if long:
            return long
        grid, is_matrix = read_grid(text)
        values = _values(grid)
    except (MatrixSyntaxError, ExprError) as err:
        return Preview(error=str(err))
    body = r" \\ ".join(" & ".join(_number_latex(v) for v in row) for row in values)
    if not is_matrix:
        return Preview(latex=rf"\left({body.replace('&', ',')}\right)")
    return Preview(latex=rf"\begin{{bmatrix}}{body}\end{{bmatrix}}")


def preview_shape(text: str, spec: ShapeSpec) -> Preview:
    dims = None if _too_long(text) else read_shape(text)
    if dims is None:
        return Preview(error="not a shape: write whole numbers such as 2×3×4 or (2, 3, 4)")
    return Preview(latex=r" \times ".join(str(d) for d in dims))


def _unit_latex(unit: str) -> str:
    # canonical_unit gives MiB, KB, Mib, B or b: KaTeX shows it as text, upright.
    return rf"\text{{{unit}}}"


def preview_size(text: str, spec: SizeSpec) -> Preview:
    read = None if _too_long(text) else read_amount(text)
    if read is None:
        return Preview(error="not a size: write a number and a unit such as 1.5 KiB or 512 B")
    amount, typed = read
    unit = canonical_unit(typed)
    if unit is None:
        return Preview(error=f"unknown unit {typed[:20]!r}; use one of {_VALID_UNITS}")
    return Preview(latex=rf"{_fraction(amount)}\,{_unit_latex(unit)}")


def _fraction(value: Fraction) -> str:
    if value.denominator == 1:
        return str(value.numerator)
    as_float = float(value)
    return _number_latex(as_float) if math.isfinite(as_float) else "?"
