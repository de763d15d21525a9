"""Parse and evaluate a student's arithmetic expression without ever calling eval.

The text goes LaTeX -> plain -> tokens (with implicit multiplication made explicit) -> ``ast.parse`` -> a walk that
accepts only numbers, allowed names, ``+ - * / **``, unary signs and calls of a few one-argument functions. Limits
are checked before anything is computed: input length, nesting depth, node count, and exponent size, so inputs like
``10**100**100`` or ``9^9^9`` are refused instead of hanging the worker. The same validated tree is evaluated with
floats here and turned into SymPy by the symbolic grader.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Collection, Mapping, Sequence

from graders.answers.expr_errors import (
    ExprError,
    ExprEvalError,
    ExprOverflow,
    ExprSyntaxError,
    ExprTooBig,
    UnknownName,
)
from graders.answers.latex import latex_to_plain
from graders.answers.mathtext import unicode_math_to_ascii
from graders.answers.normalize import strip_trailing_punct

MAX_CHARS = 500
MAX_DEPTH = 50
MAX_NODES = 300
MAX_EXPONENT = 1e4  # |exponent| allowed when the exponent is a number
MAX_EXPONENT_CONSTANT = 1e6  # any literal inside an exponent

FUNCTIONS: dict[str, Callable[[float], float]] = {
    "exp": math.exp,
    "log": math.log,
    "ln": math.log,
    "sqrt": math.sqrt,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
}
CONSTANTS = {"pi": math.pi, "e": math.e}

_TOKEN = re.compile(
    r"\s*(?:(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)|(?P<name>[^\W\d]\w*)|(?P<op>\*\*|[-+*/(),])|(?P<bad>\S))"
)
_LEADING_ZEROS = re.compile(r"^0+(?=\d)")
_BINOPS = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow)
BIG_O = "O"

Token = tuple[str, str]


class AmbiguousName(UnknownName):
    """A run of letters that reads as allowed symbols in more than one way (``dk`` when d, k and d_k are allowed)."""

    def __init__(self, name: str, readings: Sequence[str]) -> None:
        super().__init__(name)
        self.readings = list(readings)
        self.args = (f"'{name[:30]}' is ambiguous: it could be {' or '.join(r[:40] for r in self.readings)}",)


def _tokenize(plain: str) -> list[Token]:
    tokens = []
    for m in _TOKEN.finditer(plain):
        kind = m.lastgroup or "bad"
        if kind == "bad":
            raise ExprSyntaxError(f"unexpected character '{m.group(kind)}'")
        value = m.group(kind)
        if kind == "num":
            value = _LEADING_ZEROS.sub("", value)  # "007" is 7 to a student, a SyntaxError to Python
        tokens.append((kind, value))
    return tokens


def _with_implicit_products(tokens: list[Token]) -> str:
    """Join tokens, writing the ``*`` students leave out: ``2pi``, ``2 sqrt(x)``, ``(a)(b)``, ``2(x+1)``."""
    out: list[str] = []
    prev: Token | None = None
    for tok in tokens:
        if prev is not None:
            left_ends_value = prev[0] == "num" or prev[1] == ")" or (prev[0] == "name" and prev[1] not in FUNCTIONS)
            right_starts_value = tok[0] == "name" or tok[1] == "(" or (tok[0] == "num" and prev[1] == ")")
            if left_ends_value and right_starts_value:
                out.append("*")
        out.append(tok[1])
        prev = tok
    return " ".join(out)


_BRACKETS = str.maketrans("[]", "()")
_INDEXING = re.compile(r"\]\s*\[")


def _brackets_as_grouping(plain: str) -> str:
    """Square brackets group as round ones do in handwriting: ``exp(a)/[exp(a)+1]``.

    Not a Python list or an index (``[0.67]``, ``[1][0]``): those stay unreadable, as a number is expected.
    """
    if "[" not in plain or _INDEXING.search(plain):
        return plain
    if plain.startswith("[") and _closing(plain, 0) == len(plain) - 1:
        return plain
    return plain.translate(_BRACKETS)


def _closing(text: str, start: int) -> int:
    depth = 0
    for i in range(start, len(text)):
        depth += text[i] == "["
        depth -= text[i] == "]"
        if depth == 0:
            return i
    return -1


def _check_nesting(plain: str) -> None:
    depth = 0
    for c in plain:
        depth += c == "("
        depth -= c == ")"
        if depth > MAX_DEPTH:
            raise ExprTooBig("the expression is too deeply nested")


def _plain_tokens(text: str) -> list[Token]:
    if len(text) > MAX_CHARS:
        raise ExprTooBig(f"the expression is too long (at most {MAX_CHARS} characters)")
    # Trailing sentence punctuation ("sqrt(d_k)。") is not part of the formula; "2." loses nothing either.
    plain = unicode_math_to_ascii(latex_to_plain(strip_trailing_punct(text.strip())))
    plain = _brackets_as_grouping(plain)
    _check_nesting(plain)
    return _tokenize(plain)


def to_python_syntax(text: str) -> str:
    """Normalise LaTeX/Unicode math to the plain Python-syntax text that is handed to ``ast.parse``."""
    return _with_implicit_products(_plain_tokens(text))


def _readings(name: str, pieces: Collection[str]) -> list[list[str]]:
    """Up to two ways to write ``name`` as a run of ``pieces`` (``BTd`` -> [[B, T, d]]); [] when there is none.

    ``ways[i]`` counts (capped at 2) the decompositions of ``name[i:]``, so a second reading is found without
    enumerating them all: follow the first reading and, at the first position where another piece also leads to a
    complete decomposition, branch off.
    """
    n = len(name)
    ordered = sorted(pieces, key=lambda p: (-len(p), p))  # deterministic: longest piece first
    ways = [0] * (n + 1)
    ways[n] = 1
    for i in range(n - 1, -1, -1):
        ways[i] = min(2, sum(ways[i + len(p)] for p in ordered if p and name.startswith(p, i)))

    def complete(i: int) -> list[str]:
        out = []
        while i < n:
            piece = next(p for p in ordered if p and name.startswith(p, i) and ways[i + len(p)])
            out.append(piece)
            i += len(piece)
        return out

    if ways[0] == 0:
        return []
    first = complete(0)
    if ways[0] == 1:
        return [first]
    i = 0
    for k, piece in enumerate(first):
        if ways[i + len(piece)] == 1:
            other = next((p for p in ordered if p != piece and p and name.startswith(p, i) and ways[i + len(p)]), None)
            if other is not None:
                return [first, [*first[:k], other, *complete(i + len(other))]]
        i += len(piece)
    return [first]  # unreachable: ways[0] == 2 means some position branches


def _split_juxtaposed(tokens: list[Token], table: Mapping[str, str], symbols: Collection[str]) -> list[Token]:
    """Read a name that is not allowed as allowed symbols written side by side: ``BT`` is ``B T`` for [B, T].

    Only a split that is unique counts (``BTd`` with B, T, d; not ``dk`` when d, k and d_k are all allowed). An
    exact symbol, a function and a constant are never split; a loose spelling (``dk`` for d_k) is one reading among
    the others. Pieces are whole names, so underscores stay inside them: ``d_kT`` is d_k T, and ``B_T`` with [B, T]
    stays unknown. The pieces become separate name tokens, which _with_implicit_products multiplies.
    """
    out: list[Token] = []
    for kind, value in tokens:
        if kind != "name" or value in symbols or value in FUNCTIONS or value in CONSTANTS:
            out.append((kind, value))
            continue
        readings = _readings(value, table)
        if len(readings) > 1:
            raise AmbiguousName(value, ["*".join(table[p] for p in r) for r in readings])
        if readings:
            out.extend(("name", piece) for piece in readings[0])
        else:
            out.append((kind, value))  # unknown: the validator names it
    return out


def _unwrap_big_o(tokens: list[Token]) -> list[Token]:
    """``O(B T^2 d)`` -> ``B T^2 d`` when the O wraps the whole input; anything else is returned unchanged."""
    if len(tokens) < 3 or tokens[0] != ("name", BIG_O) or tokens[1] != ("op", "(") or tokens[-1] != ("op", ")"):
        return tokens
    depth = 0
    for index, (_, value) in enumerate(tokens[1:], start=1):
        depth += value == "("
        depth -= value == ")"
        if depth == 0 and index != len(tokens) - 1:
            return tokens  # O(a) + O(b): the first group closes early
    return tokens[2:-1]


class _Validator:
    """Walk the AST, accept only whitelisted nodes, and map names students write to allowed symbols."""

    def __init__(self, symbols: Mapping[str, str]) -> None:
        self.symbols = symbols
        self.nodes = 0

    def check(self, node: ast.AST, depth: int = 0, in_exponent: bool = False) -> None:
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise ExprTooBig("the expression is too large or too deeply nested")
        if isinstance(node, ast.Constant):
            self._check_constant(node, in_exponent)
        elif isinstance(node, ast.Name):
            self._check_name(node)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
            self.check(node.operand, depth + 1, in_exponent)
        elif isinstance(node, ast.BinOp) and isinstance(node.op, _BINOPS):
            self.check(node.left, depth + 1, in_exponent)
            self.check(node.right, depth + 1, in_exponent or isinstance(node.op, ast.Pow))
            if isinstance(node.op, ast.Pow):
                _check_power(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
            if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
                raise ExprSyntaxError(f"{node.func.id}() takes exactly one argument")
            self.check(node.args[0], depth + 1, in_exponent)
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else "?"
            raise ExprSyntaxError(f"unknown function '{name[:30]}'")
        else:
            raise ExprSyntaxError("only numbers, + - * / ^, parentheses and simple functions are allowed")

    @staticmethod
    def _check_constant(node: ast.Constant, in_exponent: bool) -> None:
        value = node.value
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ExprSyntaxError("only real numbers are allowed")
        if isinstance(value, float) and not math.isfinite(value):
            raise ExprTooBig("a number in the expression is too large")
        if in_exponent and abs(value) > MAX_EXPONENT_CONSTANT:
            raise ExprTooBig("an exponent in the expression is too large")

    def _check_name(self, node: ast.Name) -> None:
        if node.id in self.symbols:
            node.id = self.symbols[node.id]
        elif node.id not in CONSTANTS:
            raise UnknownName(node.id)


def _free_names(node: ast.AST) -> bool:
    """Whether the tree mentions a symbol (function names and the constants pi, e do not count)."""
    called = {id(n.func) for n in ast.walk(node) if isinstance(n, ast.Call)}
    return any(isinstance(n, ast.Name) and n.id not in CONSTANTS and id(n) not in called for n in ast.walk(node))


def _check_power(node: ast.BinOp) -> None:
    """Refuse powers that would blow up before SymPy or floats see them (``9^9^9``, ``(10^300)^9999``)."""
    if _free_names(node.right):
        return
    try:
        exponent = evaluate(node.right)
    except ExprOverflow as err:
        raise ExprTooBig("an exponent in the expression is too large") from err
    if abs(exponent) > MAX_EXPONENT:
        raise ExprTooBig("an exponent in the expression is too large")
    if not _free_names(node.left):
        try:
            evaluate(node)
        except ExprOverflow as err:
            raise ExprTooBig("a power in the expression is too large to evaluate") from err


def _symbol_table(symbols: Collection[str]) -> dict[str, str]:
    """Names a student may write for each symbol: ``d_k`` itself, and ``dk`` when that is unambiguous."""
    table: dict[str, str] = {}
    loose: dict[str, list[str]] = {}
    for s in symbols:
        loose.setdefault(s.replace("_", ""), []).append(s)
    for key, owners in loose.items():
        if len(owners) == 1:
            table[key] = owners[0]
    table.update({s: s for s in symbols})
    return table


def parse_expression(text: str, symbols: Collection[str] = (), *, big_o: bool = False) -> ast.expr:
    """Parse a student's expression into a validated AST.

    Names that are not allowed but split uniquely into allowed symbols are products: ``BT^2d`` is ``B*T**2*d``
    for symbols [B, T, d].

    Args:
        text: plain, Unicode or LaTeX math, e.g. ``2^20``, ``exp(1/sqrt(2))``, ``\\frac{1}{\\sqrt{d_k}}``.
        symbols: variable names allowed besides ``pi`` and ``e`` (a symbol named ``e`` shadows the constant).
        big_o: read ``O(expr)`` / ``\\mathcal{O}(expr)`` wrapping the whole input as ``expr`` unless ``O`` is an
            allowed symbol. Complexity questions ask for what goes inside the O; students often write the O too.

    Returns:
        The expression node; its Name ids are canonical symbol names or constants.

    Raises:
        ExprSyntaxError: not readable (UnknownName for a name that is not allowed, AmbiguousName for one that
            splits into allowed symbols in several ways).
        ExprTooBig: too long, too deep, or an exponent too large.
    """
    table = _symbol_table(symbols)
    tokens = _plain_tokens(text)
    if big_o and BIG_O not in table:
        tokens = _unwrap_big_o(tokens)
    source = _with_implicit_products(_split_juxtaposed(tokens, table, symbols))
    if not source:
        raise ExprSyntaxError("empty expression")
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError) as err:
        raise ExprSyntaxError("not a valid expression") from err
    except (RecursionError, MemoryError) as err:
        raise ExprTooBig("the expression is too deeply nested") from err
    _Validator(table).check(tree.body)
    if not _free_names(tree.body):
        # A constant that overflows (1e308*1e308) is refused here, so no caller escalates it to SymPy.
        try:
            evaluate(tree.body)
        except ExprOverflow as err:
            raise ExprTooBig("a number in the expression is too large") from err
    return tree.body


def evaluate(node: ast.expr, env: Mapping[str, float] | None = None) -> float:
    """Evaluate a tree from parse_expression with floats.

    Args:
        node: a validated expression node.
        env: values of the symbols; ``pi`` and ``e`` are built in unless env names them.

    Returns:
        A finite float.

    Raises:
        ExprEvalError: division by zero, a math domain error, overflow or a non-finite result.
        ExprTooBig: an exponent whose value exceeds MAX_EXPONENT.
    """
    try:
        value = _eval(node, env or {})
    except ZeroDivisionError as err:
        raise ExprEvalError("division by zero") from err
    except OverflowError as err:
        raise ExprOverflow("the result is too large") from err
    except (ValueError, TypeError) as err:
        if isinstance(err, ExprError):
            raise
        raise ExprEvalError("a function got a value outside its domain (e.g. log or sqrt of a negative)") from err
    if not math.isfinite(value):
        raise ExprOverflow("the result is too large")
    return value


def _eval(node: ast.expr, env: Mapping[str, float]) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.Name):
        return env[node.id] if node.id in env else CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand, env)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return FUNCTIONS[node.func.id](_eval(node.args[0], env))
    if isinstance(node, ast.BinOp):
        return _binop(node.op, _eval(node.left, env), _eval(node.right, env))
    raise ExprSyntaxError("unsupported expression")


def _binop(op: ast.operator, a: float, b: float) -> float:
    if isinstance(op, ast.Add):
        result = a + b
    elif isinstance(op, ast.Sub):
        result = a - b
    elif isinstance(op, ast.Mult):
        result = a * b
    elif isinstance(op, ast.Div):
        result = a / b
    else:
        if abs(b) > MAX_EXPONENT:
            raise ExprTooBig("an exponent in the expression is too large")
        result = math.pow(a, b)  # raises instead of going complex for (-8) ** (1/3)
    if not math.isfinite(result):
        raise OverflowError
    return result
