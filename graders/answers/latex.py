"""A small LaTeX-to-plain converter for the math students type: ``\\frac{1}{\\sqrt{d_k}}`` -> ``((1)/(sqrt((d_k))))``.

It knows only the handful of commands that appear in answers (fractions, roots, powers, subscripts, products,
functions, Greek letters, font wrappers). Anything else raises ExprSyntaxError rather than being guessed at.
Plain input passes through unchanged except for ``^{...}`` / ``_{...}``, so it is safe to apply to every answer.
The output is only ever parsed by the whitelisting parser in safe_expr, never evaluated.
"""

from __future__ import annotations

from graders.answers.expr_errors import ExprSyntaxError, ExprTooBig

MAX_NESTING = 50

_FRACTIONS = {"frac", "dfrac", "tfrac", "cfrac"}
_FUNCTIONS = {"exp", "log", "ln", "sin", "cos", "tan"}
_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "varepsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda",
    "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "phi", "varphi", "chi", "psi", "omega",
}  # fmt: skip
# Font and text wrappers whose content is a name: \mathrm{Var}, \operatorname{softmax}, \text{d}.
_TEXT_WRAPPERS = {"mathrm", "text", "textrm", "mathit", "mathbf", "mathsf", "boldsymbol", "operatorname", "mathcal"}
_PRODUCTS = {"cdot": "*", "times": "*", "ast": "*", "div": "/"}
_SPACING = {"left", "right", "displaystyle", "textstyle", "quad", "qquad", "big", "Big", "bigl", "bigr", "Bigl", "Bigr"}
_DELIMITERS = {"(": "(", "[": "(", "{": "(", ")": ")", "]": ")", "}": ")", ".": "", "\\{": "(", "\\}": ")"}


def _strip_math_wrappers(text: str) -> str:
    # $...$, $$...$$; \( \) and \[ \] are dropped by _command as zero-width delimiters.
    return text.strip().replace("$", "")


class _Reader:
    """Recursive-descent pass over the LaTeX source, producing plain math text."""

    def __init__(self, text: str) -> None:
        self.s = text
        self.i = 0
        self.depth = 0

    def convert(self, closing: str | None = None) -> str:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise ExprTooBig("the expression is too deeply nested")
        out: list[str] = []
        while self.i < len(self.s):
            c = self.s[self.i]
            if closing is not None and c == closing:
                self.i += 1
                self.depth -= 1
                return "".join(out)
            self.i += 1
            if c == "\\":
                out.append(self._command())
            elif c == "{":
                out.append("(" + self.convert("}") + ")")
            elif c == "}":
                raise ExprSyntaxError("unbalanced braces")
            elif c == "^":
                out.append("**" + self._exponent())
            elif c == "_":
                out.append(self._subscript())
            else:
                out.append(c)
        if closing is not None:
            raise ExprSyntaxError("unbalanced braces" if closing == "}" else f"missing '{closing}'")
        self.depth -= 1
        return "".join(out)

    def _skip_spaces(self) -> None:
        while self.i < len(self.s) and self.s[self.i].isspace():
            self.i += 1

    def _argument(self) -> str:
        """One macro argument: a braced group, a command, or a single character."""
        self._skip_spaces()
        if self.i >= len(self.s):
            raise ExprSyntaxError("a LaTeX command is missing its argument")
        c = self.s[self.i]
        self.i += 1
        if c == "{":
            return "(" + self.convert("}") + ")"
        if c == "\\":
            return self._command()
        return c

    def _exponent(self) -> str:
        # ^{...} groups; a bare ^ keeps plain-text meaning (d_k^(1/2), x^12), so nothing more is consumed.
        self._skip_spaces()
        if self.i < len(self.s) and self.s[self.i] == "{":
            self.i += 1
            return "(" + self.convert("}") + ")"
        return ""

    def _subscript(self) -> str:
        # d_{k} is the name d_k; a bare _ is already part of a plain name.
        if self.i < len(self.s) and self.s[self.i] == "{":
            self.i += 1
            inner = self.convert("}").replace(" ", "")
            if not inner.replace("_", "").isalnum():
                raise ExprSyntaxError("a subscript must be letters or digits, e.g. d_{k}")
            return "_" + inner
        return "_"

    def _name(self) -> str:
        start = self.i
        while self.i < len(self.s) and self.s[self.i].isalpha():
            self.i += 1
        if self.i == start and self.i < len(self.s):
            self.i += 1  # a one-character command such as \, \; \{ \(
        return self.s[start : self.i]

    def _command(self) -> str:
        name = self._name()
        if name in _FRACTIONS:
            num, den = self._argument(), self._argument()
            return f"(({num})/({den}))"
        if name == "sqrt":
            return self._sqrt()
        if name in _PRODUCTS:
            return _PRODUCTS[name]
        if name in _FUNCTIONS or name in _GREEK:
            return f" {name} "
        if name in _TEXT_WRAPPERS:
            # The content is a name, so no parentheses or padding: \mathrm{d}_{\mathrm{model}} is d_model.
            return self._argument().strip("()")
        if name in ("left", "right"):
            return self._delimiter()
        if name in _SPACING or name in (",", ";", "!", ":", " ", "(", ")", "[", "]"):
            return " "
        if name in ("{", "}"):
            return _DELIMITERS[name]
        raise ExprSyntaxError(f"unsupported LaTeX command '\\{name[:20]}'")

    def _sqrt(self) -> str:
        self._skip_spaces()
        if self.i < len(self.s) and self.s[self.i] == "[":
            self.i += 1
            index = self.convert("]")
            return f"(({self._argument()})**(1/({index})))"
        return f"sqrt({self._argument()})"

    def _delimiter(self) -> str:
        self._skip_spaces()
        if self.i >= len(self.s):
            raise ExprSyntaxError(r"\left or \right without a delimiter")
        c = self.s[self.i]
        self.i += 1
        if c == "\\":
            c += self._name()
        if c not in _DELIMITERS:
            raise ExprSyntaxError(f"unsupported delimiter '{c[:10]}'")
        return _DELIMITERS[c]


def latex_to_plain(text: str) -> str:
    """Convert LaTeX math (or plain math, which passes through) to plain text for the safe parser.

    Args:
        text: the student's input, with or without ``$...$``.

    Returns:
        Plain math text, e.g. ``sqrt((d_k))`` for ``\\sqrt{d_k}``.

    Raises:
        ExprSyntaxError: unbalanced braces or an unsupported command.
        ExprTooBig: nesting deeper than MAX_NESTING.
    """
    return _Reader(_strip_math_wrappers(text)).convert()
