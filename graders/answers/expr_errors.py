"""Errors raised while reading a student's expression; every message is safe to show the student."""

from __future__ import annotations


class ExprError(ValueError):
    """Base class: the expression cannot be graded. ``str(err)`` is student-safe."""


class ExprSyntaxError(ExprError):
    """The text is not an expression we can read (a typo, an unsupported operator or LaTeX command)."""


class UnknownName(ExprSyntaxError):
    """A name that is neither an allowed symbol, a constant nor a whitelisted function."""

    def __init__(self, name: str) -> None:
        super().__init__(f"unknown symbol '{name[:30]}'")
        self.name = name


class ExprTooBig(ExprError):
    """Too long, too deeply nested or with exponents that would blow up: refused before any evaluation."""


class ExprEvalError(ExprError):
    """Readable but not evaluable: division by zero, log of a negative number, overflow."""


class ExprOverflow(ExprEvalError):
    """The value is too large for a float (or an exponent is too large to try)."""
