"""The whitelisting parser and float evaluator shared by the numeric, matrix and symbolic graders."""

from __future__ import annotations

import ast
import math

import pytest

from graders.answers.expr_errors import ExprEvalError, ExprSyntaxError, ExprTooBig, UnknownName
from graders.answers.latex import latex_to_plain
from graders.answers.safe_expr import AmbiguousName, evaluate, parse_expression, to_python_syntax


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2^20", 2**20),
        ("2**20", 2**20),
        ("-2^2", -4),
        ("2pi", 2 * math.pi),
        ("2(3+1)", 8),
        ("(1+1)(2+1)", 6),
        ("√2", math.sqrt(2)),
        ("√(4)", 2),
        ("3²", 9),
        ("10⁻³", 1e-3),
        ("6÷3×2", 4),
        ("2−1", 1),  # U+2212 minus sign
        ("ln(e)", 1),
        ("log(e^2)", 2),
        ("007", 7),
        ("π", math.pi),
        (r"\frac{1}{2}", 0.5),
        (r"\sqrt[3]{8}", 2),
        (r"2 \cdot 3", 6),
        (r"2 \times 3", 6),
        (r"\left(1+1\right)^{3}", 8),
        (r"$\dfrac{\pi}{\pi}$", 1),
        ("１＋２", 3),
    ],
)
def test_evaluates(text: str, value: float) -> None:
    assert evaluate(parse_expression(text)) == pytest.approx(value)


def test_symbols_and_loose_names() -> None:
    tree = parse_expression("dk + d_{v}", ["d_k", "d_v"])
    assert ast.unparse(tree) == "d_k + d_v"
    assert evaluate(tree, {"d_k": 1.0, "d_v": 2.0}) == 3


def test_a_symbol_named_e_shadows_the_constant() -> None:
    assert evaluate(parse_expression("e", ["e"]), {"e": 5.0}) == 5


@pytest.mark.parametrize("text", ["abc", "x + 1", "os", "__class__"])
def test_unknown_names(text: str) -> None:
    with pytest.raises(UnknownName):
        parse_expression(text)


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os')",
        "().__class__",
        "[1, 2]",
        "{1: 2}",
        "lambda: 1",
        "1 if 1 else 2",
        "not 1",
        "1 < 2",
        "1 // 2",
        "1 % 2",
        "1 and 2",
        "True",
        "None",
        "1j",
        "exp(1, 2)",
        "sqrt(x=1)",
        "f(1)",
        "1;2",
        "a = 1",
        "\\unknown{1}",
        "\\frac{1}",
        "{1",
    ],
)
def test_python_and_latex_outside_the_whitelist(text: str) -> None:
    with pytest.raises(ExprSyntaxError):
        parse_expression(text)


@pytest.mark.parametrize(
    "text",
    [
        "9^9^9",
        "10**100**100",
        "2^(10^5)",
        "x^1e7",
        "1" * 501,
        "(" * 51 + "1" + ")" * 51,
        "1e999",
        "(10^300)^9999",
        "exp(1000)",
        "10^300*10^300",
        "2^exp(10)",
        "x^exp(10)",
    ],
)
def test_refused_before_evaluation(text: str) -> None:
    with pytest.raises(ExprTooBig):
        parse_expression(text, ["x"])


@pytest.mark.parametrize("text", ["1/0", "log(0)", "sqrt(-1)", "(-8)^(1/3)", "x/(x-x)", "log(x-x)"])
def test_evaluation_errors(text: str) -> None:
    with pytest.raises(ExprEvalError):
        evaluate(parse_expression(text, ["x"]), {"x": 1.0})


@pytest.mark.parametrize(
    ("latex", "plain"),
    [
        (r"\sqrt{d_k}", "sqrt((d_k))"),
        (r"d_{k}", "d_k"),
        (r"d_k^{1/2}", "d_k**(1/2)"),
        (r"\frac{a}{b}", "(((a))/((b)))"),
        (r"\operatorname{softmax}", "softmax"),
        (r"\mathrm{d}_{\mathrm{model}}", "d_model"),
        ("x^(1/2)", "x**(1/2)"),
        ("$x$", "x"),
    ],
)
def test_latex_to_plain(latex: str, plain: str) -> None:
    assert latex_to_plain(latex) == plain


@pytest.mark.parametrize(
    ("text", "symbols", "parsed"),
    [
        ("BT^2d", ["B", "T", "d", "H"], "B * T ** 2 * d"),
        ("BHT^2", ["B", "T", "d", "H"], "B * H * T ** 2"),
        ("2BT(T+1)", ["B", "T"], "2 * B * T * (T + 1)"),
        ("dd_k", ["d", "d_k"], "d * d_k"),
        ("d_kT", ["d_k", "T"], "d_k * T"),
        ("dkdv", ["d_k", "d_v"], "d_k * d_v"),
        ("dk", ["d_k"], "d_k"),
        ("ab", ["a", "b", "ab"], "ab"),
        ("Be", ["B", "e"], "B * e"),
        ("ln(T)", ["l", "n", "T"], "ln(T)"),  # functions and constants are never split
        ("pi", ["p", "i"], "pi"),
    ],
)
def test_juxtaposed_symbols_split_uniquely(text: str, symbols: list[str], parsed: str) -> None:
    assert ast.unparse(parse_expression(text, symbols)) == parsed


@pytest.mark.parametrize(
    ("text", "symbols", "readings"),
    [
        ("BTd", ["B", "T", "d", "BT"], ["BT*d", "B*T*d"]),
        ("dk", ["d", "k", "d_k"], ["d_k", "d*k"]),
        ("abab", ["a", "b", "ab"], ["ab*ab", "ab*a*b"]),
    ],
)
def test_ambiguous_juxtaposition(text: str, symbols: list[str], readings: list[str]) -> None:
    with pytest.raises(AmbiguousName) as info:
        parse_expression(text, symbols)
    assert info.value.readings == readings
    assert str(info.value) == f"'{text}' is ambiguous: it could be {' or '.join(readings)}"


@pytest.mark.parametrize(("text", "symbols"), [("BTx", ["B", "T"]), ("B_T", ["B", "T"]), ("d_k", ["d", "k"])])
def test_names_that_do_not_split_stay_unknown(text: str, symbols: list[str]) -> None:
    with pytest.raises(UnknownName) as info:
        parse_expression(text, symbols)
    assert not isinstance(info.value, AmbiguousName)
    assert info.value.name == text


def test_long_juxtaposition_is_linear_not_exponential() -> None:
    # 2^n ways to read "aaa..." with a and aa: counting is capped, so this answers at once.
    with pytest.raises(AmbiguousName):
        parse_expression("a" * 400, ["a", "aa"])
    assert ast.unparse(parse_expression("ab" * 20, ["a", "b"])).count("*") == 39


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("O(BT^2d)", "B * T ** 2 * d"),
        (r"\mathcal{O}\left(B T^{2} d\right)", "B * T ** 2 * d"),
        ("O((B+T)*d)", "(B + T) * d"),
    ],
)
def test_big_o_wrapping_the_whole_input_is_dropped_on_request(text: str, parsed: str) -> None:
    assert ast.unparse(parse_expression(text, ["B", "T", "d"], big_o=True)) == parsed
    with pytest.raises(UnknownName):
        parse_expression(text, ["B", "T", "d"])  # off by default (numeric and matrix answers)


@pytest.mark.parametrize("text", ["O(B)+O(T)", "O(B)(T)", "2O(B)", "O"])
def test_big_o_not_wrapping_everything_stays_a_name(text: str) -> None:
    with pytest.raises(UnknownName):
        parse_expression(text, ["B", "T"], big_o=True)


def test_big_o_is_kept_when_o_is_a_symbol() -> None:
    assert ast.unparse(parse_expression("O(n)", ["O", "n"], big_o=True)) == "O * n"


def test_to_python_syntax_is_unchanged_by_splitting() -> None:
    assert to_python_syntax("BT^2d") == "BT ** 2 * d"
