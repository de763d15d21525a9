"""Symbolic answers: a formula in LaTeX or plain text, accepted when it is equivalent to the expected one.

``\\sqrt{d_k}``, ``sqrt(d_k)``, ``√d_k``, ``d_k^{1/2}`` and ``d_k**0.5`` are all the same answer. Deciding that:

1. Parse through the whitelist in safe_expr (limits on length, depth and exponents refuse hostile input at once).
2. Evaluate both formulas with floats at a few fixed random positive points. Agreement everywhere means
   equivalent; a clear disagreement at any point means not equivalent. This settles almost every answer in
   well under a millisecond, in-process.
3. Only when that is inconclusive (a point outside a function's domain, overflow, a near miss) ask SymPy whether
   ``simplify(a - b) == 0``, in a worker process with a hard time limit (symbolic_pool).
"""

from __future__ import annotations

import ast
import random
from functools import lru_cache
from typing import Literal

from graders.answers import symbolic_pool
from graders.answers.equation import Equation, last_side, read_equation
from graders.answers.expr_errors import ExprError, ExprSyntaxError, UnknownName
from graders.answers.normalize import precheck, quote, right, wrong
from graders.answers.safe_expr import MAX_CHARS, AmbiguousName, evaluate, parse_expression
from graders.answers.specs import SymbolicSpec
from graders.results import PartResult

N_POINTS = 5
POINT_RANGE = (0.5, 3.0)
AGREE_RTOL = 1e-9  # below this the formulas agree
DIFFER_RTOL = 1e-6  # above this they differ; in between, float error is possible and SymPy decides
_SEED = 20240601  # fixed, so a grade never changes between runs

COULD_NOT_EVALUATE = "could not evaluate this expression"


@lru_cache(maxsize=256)
def _expected_tree(answer: str, symbols: tuple[str, ...]) -> ast.expr:
    # The instructor's formula; an error here is a problem-set bug and is raised, not graded.
    try:
        return parse_expression(answer, symbols)
    except ExprError as err:
        raise ValueError(f"the expected expression {answer!r} is invalid: {err}") from err


def _points(symbols: tuple[str, ...]) -> list[dict[str, float]]:
    rng = random.Random(_SEED)  # noqa: S311 - sample points, not secrets
    return [{s: rng.uniform(*POINT_RANGE) for s in symbols} for _ in range(N_POINTS)]


def numeric_verdict(a: ast.expr, b: ast.expr, symbols: tuple[str, ...]) -> Literal["equal", "different"] | None:
    """Compare two validated trees at fixed random points; None when the points cannot decide."""
    agreed = 0
    for env in _points(symbols):
        try:
            x, y = evaluate(a, env), evaluate(b, env)
        except ExprError:
            continue  # outside a domain or overflow at this point: no evidence either way
        gap, scale = abs(x - y), max(abs(x), abs(y))
        if gap <= AGREE_RTOL * scale or gap <= 1e-12:
            agreed += 1
        elif gap > DIFFER_RTOL * scale:
            return "different"
    return "equal" if agreed == N_POINTS else None


def _unknown_name_feedback(name: str, symbols: tuple[str, ...]) -> str:
    allowed = ", ".join(symbols) if symbols else "no variables (only numbers, pi and e)"
    return f"unknown symbol '{name[:30]}'; you may use {allowed}"


def _worker_text(submitted: str, normalized: str) -> str:
    """The text the SymPy worker re-parses (without big_o): the parsed formula, O(.) unwrapped, products explicit."""
    compact = normalized.replace(" ", "")  # unparse output has no names or numbers that spaces must separate
    return compact if len(compact) <= MAX_CHARS else submitted


def grade_symbolic(submitted: str, spec: SymbolicSpec) -> PartResult:
    """Grade a formula by equivalence with the expected one.

    Args:
        submitted: plain (``sqrt(d_k)``, ``d_k^(1/2)``), Unicode (``√d_k``) or LaTeX (``\\sqrt{d_k}``) math;
            one-letter symbols may be juxtaposed (``BT^2d``) and the whole may be wrapped in ``O(...)``.
        spec: the part's SymbolicSpec; only ``spec.symbols`` (plus pi, e) may appear as names.

    Returns:
        Full credit or none; ``normalized`` is the formula as parsed, e.g. ``"sqrt(d_k)"``. Hostile or huge input
        yields feedback starting "could not evaluate this expression".
    """
    rejected = precheck(submitted)
    if rejected is not None:
        return rejected
    equation = _equation(submitted, spec)
    if equation.refusal is not None:
        return wrong(equation.refusal)
    submitted = equation.value
    symbols = tuple(spec.symbols)
    expected = _expected_tree(spec.answer, symbols)
    try:
        # big_o: a complexity blank asks for the inside of O(.), and students often type the O as well; when O is
        # not one of the part's symbols, "O(B T^2 d)" and "\mathcal{O}(BT^2d)" are graded as "B T^2 d".
        student = parse_expression(submitted, symbols, big_o=True)
    except AmbiguousName as err:
        return wrong(f"{err}; write the product with * or spaces (you may use {', '.join(symbols)})")
    except UnknownName as err:
        return wrong(_unknown_name_feedback(err.name, symbols))
    except ExprSyntaxError as err:
        return wrong(_not_a_formula(submitted, err))
    except ExprError as err:
        return wrong(f"{COULD_NOT_EVALUATE}: {err}")
    normalized = ast.unparse(student)
    verdict: str | None = numeric_verdict(student, expected, symbols)
    if verdict is None:
        verdict = symbolic_pool.check_equal(_worker_text(submitted, normalized), spec.answer, symbols)
    if verdict in ("timeout", "error"):
        return wrong(f"{COULD_NOT_EVALUATE}: it is too complex to check; simplify it and try again", normalized)
    if verdict == "equal":
        return right(normalized)
    return wrong("not equivalent to the expected expression", normalized)


def _equation(submitted: str, spec: SymbolicSpec) -> Equation:
    def earns(side: str) -> bool | None:
        try:
            parse_expression(side, tuple(spec.symbols), big_o=True)
        except (ExprError, AmbiguousName):
            return None  # not a formula in the part's symbols: a label such as "Var(S)"
        return grade_symbolic(side, spec).correct

    return read_equation(submitted, spec.names, earns)


def _not_a_formula(submitted: str, err: ExprSyntaxError) -> str:
    return f"expected a formula such as a*b^2, got {quote(submitted)}: {err}"


def symbolic_format_error(submitted: str, spec: SymbolicSpec) -> str | None:
    """Why ``submitted`` is not a formula at all (a syntax error such as an unclosed bracket), or None.

    Unknown or ambiguous names are answers that parse: the grader's feedback on them uses the attempt.
    """
    submitted = last_side(submitted)
    try:
        parse_expression(submitted, tuple(spec.symbols), big_o=True)
    except ExprSyntaxError as err:
        return _not_a_formula(submitted, err)
    except (ExprError, AmbiguousName):
        return None
    return None


def symbolic_normal_form(submitted: str, spec: SymbolicSpec) -> str | None:
    """The formula as grade_symbolic parses it (its ``normalized``), without comparing it (no SymPy worker); None
    for what it cannot parse."""
    if precheck(submitted) is not None:
        return None
    submitted = last_side(submitted)
    try:
        return ast.unparse(parse_expression(submitted, tuple(spec.symbols), big_o=True))
    except ExprError:
        return None
