from __future__ import annotations

import pytest

from graders.answers.choice import grade_choice
from graders.answers.specs import ChoiceSpec

SINGLE = ChoiceSpec(kind="choice", options=["A", "B", "C", "D"], answer=["B"])
MULTI = ChoiceSpec(kind="choice", options=["A", "B", "C", "D"], answer=["A", "C"], multi=True)
PER_OPTION = ChoiceSpec(
    kind="choice", options=["A", "B", "C", "D"], answer=["A", "B", "C"], multi=True, scheme="per_option"
)


@pytest.mark.parametrize("answer", ["B", "b", "Ｂ", "(B)", "（B）", "B.", "B、", " b ", "[B]", "【B】", "B。"])
def test_single_accepts(answer: str) -> None:
    result = grade_choice(answer, SINGLE)
    assert result.correct and result.normalized == "B"


@pytest.mark.parametrize("answer", ["A", "c", "（D）"])
def test_single_rejects(answer: str) -> None:
    result = grade_choice(answer, SINGLE)
    assert not result.correct and result.score == 0.0 and "B" not in result.feedback


@pytest.mark.parametrize("answer", ["B,C", "BC", "A B"])
def test_single_with_several_letters(answer: str) -> None:
    result = grade_choice(answer, SINGLE)
    assert not result.correct and result.feedback == "pick one option"


@pytest.mark.parametrize("answer", ["E", "B or C", "softmax", "1"])
def test_unknown_label_lists_valid_ones(answer: str) -> None:
    result = grade_choice(answer, SINGLE)
    assert not result.correct and "A, B, C, D" in result.feedback


@pytest.mark.parametrize(
    "answer", ["A,C", "AC", "A C", "A，C", "[A, C]", "c,a", "（A）（C）", "A、C", "A和C", "a and c", "A;C", "A,C,A"]
)
def test_multi_accepts(answer: str) -> None:
    result = grade_choice(answer, MULTI)
    assert result.correct and result.score == 1.0 and result.normalized == "A,C"


@pytest.mark.parametrize("answer", ["A", "A,B,C", "B,D", "ABCD"])
def test_multi_all_or_nothing_rejects(answer: str) -> None:
    result = grade_choice(answer, MULTI)
    assert not result.correct and result.score == 0.0


@pytest.mark.parametrize(
    ("answer", "score"),
    [
        ("A,B,C", 1.0),
        ("A,B", 2 / 3),
        ("A", 1 / 3),
        ("A,B,D", 1 / 3),  # 2 right, 1 wrong: (2 - 1) / 3
        ("A,D", 0.0),
        ("D", 0.0),
        ("ABCD", 2 / 3),
    ],
)
def test_per_option_credit(answer: str, score: float) -> None:
    result = grade_choice(answer, PER_OPTION)
    assert result.score == pytest.approx(score)
    assert result.correct is (score == 1.0)


def test_per_option_penalty_is_configurable() -> None:
    spec = PER_OPTION.model_copy(update={"penalty": 0.5})
    assert grade_choice("A,B,D", spec).score == pytest.approx((2 - 0.5) / 3)


def test_word_labels() -> None:
    spec = ChoiceSpec(kind="choice", options=["True", "False"], answer=["False"])
    assert grade_choice("false", spec).correct
    assert not grade_choice("True", spec).correct


@pytest.mark.parametrize("answer", ["", "  ", "()", "[]", "。"])
def test_empty(answer: str) -> None:
    assert grade_choice(answer, MULTI).feedback == "no answer given"
