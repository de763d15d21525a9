from __future__ import annotations

import pytest

from graders.answers.matrix import grade_matrix
from graders.answers.specs import MatrixSpec

M = MatrixSpec(kind="matrix", answer=[[1, 2], [3, 4]])
# softmax([1, 1]) and a row of attention weights as a vector
V = MatrixSpec(kind="matrix", answer=[0.5, 0.7071067811865476], rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize(
    "answer",
    [
        "[[1, 2], [3, 4]]",
        "[[1,2],[3,4]]",
        "1 2; 3 4",
        "1 2\n3 4",
        "1, 2\n3, 4",
        "[1, 2], [3, 4]",
        "[1, 2]; [3, 4]",
        "((1, 2), (3, 4))",
        "{{1, 2}, {3, 4}}",
        "［［1，2］，［3，4］］",
        "[[1. 2.]\n [3. 4.]]",
        "[[1.0000, 2.0000], [3.0000, 4.0000]]",
        r"\begin{bmatrix}1 & 2 \\ 3 & 4\end{bmatrix}",
        "[[1, 4/2], [sqrt(9), 2^2]]",
        "1 + 0 2; 3 4",
        "１　２；３　４",
    ],
)
def test_matrix_layouts(answer: str) -> None:
    result = grade_matrix(answer, M)
    assert result.correct, result.feedback
    assert result.normalized == "[[1, 2], [3, 4]]"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ("[[1, 2], [3, 5]]", "1 of 4 entries are not right"),
        ("[[4, 3], [2, 1]]", "4 of 4 entries are not right"),
        ("[[1, 3], [2, 4]]", "2 of 4 entries are not right"),  # the transpose
        ("1 -2; 3 4", "1 of 4 entries are not right"),
        ("[[1, 2, 3], [4, 5, 6]]", "expected a 2×2 matrix, got a 2×3 matrix"),
        ("[1, 2, 3, 4]", "expected a 2×2 matrix, got a vector of length 4"),
    ],
)
def test_matrix_wrong(answer: str, message: str) -> None:
    result = grade_matrix(answer, M)
    assert not result.correct and result.feedback == message


@pytest.mark.parametrize(
    "answer",
    [
        "[0.5, 0.7071]",
        "0.5, 0.7071",
        "(1/2, 1/sqrt(2))",
        "0.5 0.70711",
        "[[0.5], [0.7071]]",
        "[[0.5, 0.7071]]",
        "1/2，√2/2",
    ],
)
def test_vector_layouts(answer: str) -> None:
    assert grade_matrix(answer, V).correct


@pytest.mark.parametrize("answer", ["[0.5, 0.5]", "[0.7071, 0.5]", "[0.5, 0.7]"])
def test_vector_wrong_values(answer: str) -> None:
    result = grade_matrix(answer, V)
    assert not result.correct and "0.7071" not in result.feedback


def test_vector_wrong_length() -> None:
    result = grade_matrix("[0.5, 0.7071, 0]", V)
    assert result.feedback == "expected a vector of length 2, got a vector of length 3"


@pytest.mark.parametrize(
    "answer", ["[[1, 2], [3]]", "abc", "[[1, 2], [3, x]]", "1,,2", "[[]]", "[]", "[[1, 2], [3, 4]"]
)
def test_garbage(answer: str) -> None:
    result = grade_matrix(answer, M)
    assert not result.correct and result.score == 0.0
    assert result.feedback.startswith("expected a matrix or vector")


@pytest.mark.parametrize("answer", ["[[1, 2], [3, 9^9^9]]", "[[1, 2], [3, 1/0]]", "[[1e999, 2], [3, 4]]"])
def test_hostile_entries(answer: str) -> None:
    result = grade_matrix(answer, M)
    assert not result.correct and result.feedback.startswith("could not evaluate")


@pytest.mark.parametrize("answer", ["", "  \n "])
def test_empty(answer: str) -> None:
    assert grade_matrix(answer, M).feedback == "no answer given"
