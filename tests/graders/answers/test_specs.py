"""Spec-time validation: a broken part is refused when the problem set is loaded, not when a student submits."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from graders.answers.registry import PartSpec
from graders.answers.specs import SymbolicSpec, TextSpec

PART = TypeAdapter(PartSpec)


@pytest.mark.parametrize("regex", [r"(scaled )?dot[- ]product", r"\$?v\$?", "就是|等于", r"c_?\{?i\}?"])
def test_valid_regex_is_kept(regex: str) -> None:
    assert TextSpec(kind="text", regex=regex).regex == regex


@pytest.mark.parametrize("regex", ["(unclosed", "[a-", "*x", r"a{2,1}", "(?P<n>a)(?P<n>b)", "\\"])
def test_invalid_regex_is_refused_naming_the_field(regex: str) -> None:
    with pytest.raises(ValidationError) as info:
        TextSpec(kind="text", regex=regex)
    (error,) = info.value.errors()
    assert error["loc"] == ("regex",)
    assert "is not a valid regular expression" in error["msg"]


def test_invalid_regex_is_refused_through_the_discriminated_union() -> None:
    with pytest.raises(ValidationError, match="regex"):
        PART.validate_python({"kind": "text", "answers": ["v"], "regex": "(v"})


def test_text_spec_still_needs_something_that_accepts() -> None:
    with pytest.raises(ValidationError, match="needs answers, regex or keywords"):
        TextSpec(kind="text")


@pytest.mark.parametrize(
    ("answer", "symbols"),
    [
        ("sqrt(d_k)", ["d_k"]),
        (r"\frac{1}{\sqrt{d_k}}", ["d_k"]),
        ("B*T**2*d", ["B", "T", "d", "H"]),
        ("BT^2d", ["B", "T", "d", "H"]),
        ("d_model / h", ["d_model", "h"]),
        ("2*pi", []),
        ("e", ["e"]),
    ],
)
def test_valid_symbolic_answer_is_kept(answer: str, symbols: list[str]) -> None:
    assert SymbolicSpec(kind="symbolic", answer=answer, symbols=symbols).answer == answer


@pytest.mark.parametrize(
    ("answer", "symbols", "reason"),
    [
        ("sqrt(x)", ["d_k"], "unknown symbol 'x'"),
        ("d_k", [], "unknown symbol 'd_k'"),
        ("sqrt(d_k", ["d_k"], "not a valid expression"),
        (r"\unknown{d_k}", ["d_k"], "unsupported LaTeX command"),
        ("", ["d_k"], "empty expression"),
        ("dk", ["d", "k", "d_k"], "ambiguous"),
        ("10**100**100", [], "too large"),
        ("O(n)", ["n"], "unknown symbol 'O'"),  # the expected answer is the inside of O(.), as it is graded
    ],
)
def test_invalid_symbolic_answer_is_refused_naming_the_field(answer: str, symbols: list[str], reason: str) -> None:
    with pytest.raises(ValidationError) as info:
        SymbolicSpec(kind="symbolic", answer=answer, symbols=symbols)
    (error,) = info.value.errors()
    assert error["msg"].startswith(f"Value error, answer {answer!r} is not a valid expression with symbols")
    assert reason in error["msg"]


def test_invalid_symbolic_answer_is_refused_through_the_discriminated_union() -> None:
    with pytest.raises(ValidationError, match="answer 'sqrt\\(x\\)'"):
        PART.validate_python({"kind": "symbolic", "answer": "sqrt(x)", "symbols": ["d_k"]})
