"""Build SymPy expressions from trees validated by safe_expr, and decide equivalence with ``simplify``.

SymPy never sees the student's text: ``sympify``/``parse_expr`` call ``eval``. Only the whitelisted AST is turned
into SymPy objects, node by node. This module runs inside the symbolic worker processes (symbolic_pool), where a
slow ``simplify`` can be killed.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from typing import Any

import sympy

from graders.answers.safe_expr import parse_expression

_FUNCTIONS: dict[str, Any] = {
    "exp": sympy.exp,
    "log": sympy.log,
    "ln": sympy.log,
    "sqrt": sympy.sqrt,
    "sin": sympy.sin,
    "cos": sympy.cos,
    "tan": sympy.tan,
}
_CONSTANTS: dict[str, Any] = {"pi": sympy.pi, "e": sympy.E}


def to_sympy(node: ast.expr, symbols: Sequence[str]) -> Any:
    """Turn a validated tree into a SymPy expression; every symbol is declared positive (sizes like d_k are)."""
    if isinstance(node, ast.Constant):
        value = node.value
        # Rational(str) keeps 0.5 exact, so d_k**0.5 simplifies against sqrt(d_k).
        return sympy.Integer(value) if isinstance(value, int) else sympy.Rational(repr(value))
    if isinstance(node, ast.Name):
        if node.id in symbols:
            return sympy.Symbol(node.id, positive=True)
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = to_sympy(node.operand, symbols)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _FUNCTIONS[node.func.id](to_sympy(node.args[0], symbols))
    if isinstance(node, ast.BinOp):
        left, right = to_sympy(node.left, symbols), to_sympy(node.right, symbols)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            return left / right
        return sympy.Pow(left, right)
    raise ValueError("unsupported node")  # unreachable for validated trees


def simplify_equal(student: str, expected: str, symbols: Sequence[str]) -> bool:
    """Whether ``simplify(student - expected) == 0``; both texts are re-parsed through the whitelist here."""
    a = to_sympy(parse_expression(student, symbols), symbols)
    b = to_sympy(parse_expression(expected, symbols), symbols)
    return bool(sympy.simplify(a - b) == 0)
