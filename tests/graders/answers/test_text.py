from __future__ import annotations

import pytest

from graders.answers.normalize import MAX_ANSWER_CHARS
from graders.answers.specs import TextSpec
from graders.answers.text import grade_text

PE = TextSpec(kind="text", answers=["positional encoding", "位置编码"])


@pytest.mark.parametrize(
    "answer",
    [
        "positional encoding",
        "Positional Encoding",
        "  positional   encoding  ",
        "positional\nencoding.",
        "positional encoding,",
        "位置编码",
        "位置编码。",
        "位置编码；",
        " 位置 编码 ",
        "ｐｏｓｉｔｉｏｎａｌ　ｅｎｃｏｄｉｎｇ",  # full-width letters and ideographic space
        "POSITIONAL ENCODING，",
    ],
)
def test_accepts_aliases_after_normalisation(answer: str) -> None:
    result = grade_text(answer, PE)
    assert result.correct and result.score == 1.0


@pytest.mark.parametrize("answer", ["positional embedding", "encoding", "位置", "self-attention", "位置编码器"])
def test_rejects_wrong_terms(answer: str) -> None:
    result = grade_text(answer, PE)
    assert not result.correct and result.score == 0.0
    assert "position" not in result.feedback and "位置编码" not in result.feedback


def test_normalized_is_the_folded_answer() -> None:
    assert grade_text("  Positional  ENCODING。", PE).normalized == "positional encoding"


@pytest.mark.parametrize("answer", ["", "   ", "\n\t", "。"])
def test_empty(answer: str) -> None:
    assert grade_text(answer, PE).feedback == "no answer given"


def test_case_sensitive() -> None:
    spec = TextSpec(kind="text", answers=["QKV"], case_sensitive=True)
    assert grade_text("QKV", spec).correct
    result = grade_text("qkv", spec)
    assert not result.correct and "capitalisation" in result.feedback


def test_regex_full_match_on_normalised_text() -> None:
    spec = TextSpec(kind="text", regex=r"(scaled )?dot[- ]product( attention)?")
    assert grade_text("Dot-Product", spec).correct
    assert grade_text("scaled dot product attention.", spec).correct
    assert not grade_text("not a dot product", spec).correct


def test_aliases_are_normalised_too() -> None:
    spec = TextSpec(kind="text", answers=["  Layer  Norm。"])
    assert grade_text("layer norm", spec).correct


@pytest.mark.parametrize(
    ("answer", "ok"),
    [
        ("避免数值溢出，使 softmax 梯度稳定", True),
        ("keeps the SOFTMAX gradients stable and avoids 溢出", True),
        ("梯度消失", False),
    ],
)
def test_keywords(answer: str, ok: bool) -> None:
    spec = TextSpec(kind="text", keywords=["softmax", "溢出"])
    assert grade_text(answer, spec).correct is ok


def test_too_long_input() -> None:
    result = grade_text("a" * (MAX_ANSWER_CHARS + 1), PE)
    assert not result.correct and "too long" in result.feedback


@pytest.mark.parametrize(
    ("traditional", "alias"), [("解碼器", "解码器"), ("位置編碼", "位置编码"), ("因果掩碼", "因果掩码")]
)
def test_traditional_chinese_is_the_same_answer(traditional: str, alias: str) -> None:
    # OpenCC's t2s: both sides are compared in simplified characters, aliases and keywords alike.
    assert grade_text(traditional, TextSpec(kind="text", answers=[alias])).correct
    assert grade_text(alias, TextSpec(kind="text", answers=[traditional])).correct
    assert grade_text(f"用{traditional}", TextSpec(kind="text", keywords=[alias])).correct


@pytest.mark.parametrize(
    "answer",
    ["\\mathbf{V}", "$V$", "\\boldsymbol{V}", "$\\mathbf{V}$", "**V**", "V矩阵", "V 矩阵", "矩阵V", "V matrix"],
)
def test_markup_around_a_case_sensitive_symbol(answer: str) -> None:
    assert grade_text(answer, TextSpec(kind="text", answers=["V"], case_sensitive=True)).correct


@pytest.mark.parametrize("answer", ["\\mathbf{v}", "v矩阵", "K矩阵", "$K$", "VV"])
def test_markup_does_not_change_the_symbol(answer: str) -> None:
    assert not grade_text(answer, TextSpec(kind="text", answers=["V"], case_sensitive=True)).correct
