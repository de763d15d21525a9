"""Acceptance tests for problems/attention: realistic student answers, right and wrong, graded by the real graders."""

from __future__ import annotations

import pytest

from graders.answers import grade_part
from graders.model import CodeProblem, FillInProblem, ManualProblem
from tests.problems.conftest import Case, check_set_files, failing_yaml_examples, part_spec, uncovered_auto_parts

SET_ID = "attention"

# Reference values (Q = K = I_2, V = diag(2, 4), d_k = 2), recomputed with numpy when the set was written:
# S = I/sqrt(2); A = row softmax(S); p = A_11 = 0.669762; A V = [[1.339523, 1.320954], [0.660477, 2.679046]].
# The rejected matrices are typical mistakes: no scaling (p = e/(e+1) = 0.7311), dividing by d_k, the transpose.
CASES: list[Case] = [
    # q1 b1: S
    ("q1", "b1", "[[0.7071, 0], [0, 0.7071]]", True),
    ("q1", "b1", "[[0.707, 0], [0, 0.707]]", True),
    ("q1", "b1", "[[1/sqrt(2), 0], [0, 1/sqrt(2)]]", True),
    ("q1", "b1", "[[1/√2, 0], [0, 1/√2]]", True),
    ("q1", "b1", "［［0.7071，0］，［0，0.7071］］", True),
    ("q1", "b1", "\\begin{bmatrix}0.7071 & 0\\\\ 0 & 0.7071\\end{bmatrix}", True),
    ("q1", "b1", "[[1, 0], [0, 1]]", False),
    ("q1", "b1", "[[0.5, 0], [0, 0.5]]", False),
    ("q1", "b1", "[0.7071, 0.7071]", False),
    # q1 b2: A
    ("q1", "b2", "[[0.6698, 0.3302], [0.3302, 0.6698]]", True),
    ("q1", "b2", "[[0.67, 0.33], [0.33, 0.67]]", True),
    ("q1", "b2", "[[0.6698,0.3302],[0.3302,0.6698]]", True),
    ("q1", "b2", "[[0.7311, 0.2689], [0.2689, 0.7311]]", False),
    ("q1", "b2", "[[0.5, 0.5], [0.5, 0.5]]", False),
    ("q1", "b2", "[[0.7071, 0], [0, 0.7071]]", False),
    # q1 b3: p
    ("q1", "b3", "≈0.6698", True),
    ("q1", "b3", "p = 0.6698", True),
    ("q1", "b3", "exp(1/√2)/[exp(1/√2)+1]", True),
    ("q1", "b3", "A_12 = 0.6698", False),
    ("q1", "b3", "0.6698", True),
    ("q1", "b3", "0.67", True),
    ("q1", "b3", "0.66976", True),
    ("q1", "b3", "０．６６９８", True),
    ("q1", "b3", "exp(1/sqrt(2))/(exp(1/sqrt(2))+1)", True),
    ("q1", "b3", "e^(1/√2)/(e^(1/√2)+1)", True),
    ("q1", "b3", "0.7311", False),
    ("q1", "b3", "0.5", False),
    ("q1", "b3", "0.3302", False),
    ("q1", "b3", "0.66", False),
    # q1 b4: A V
    ("q1", "b4", "[[1.3395, 1.3210], [0.6605, 2.6790]]", True),
    ("q1", "b4", "[[1.34, 1.32], [0.66, 2.68]]", True),
    ("q1", "b4", "[[1.3395, 0.6605], [1.3210, 2.6790]]", False),
    ("q1", "b4", "[[1.4621, 1.0757], [0.5379, 2.9243]]", False),
    ("q1", "b4", "[[2, 0], [0, 4]]", False),
    # q2 b1: the weights sum to 1
    ("q2", "b1", "1", True),
    ("q2", "b1", "1.0", True),
    ("q2", "b1", "１", True),
    ("q2", "b1", "0", False),
    ("q2", "b1", "2", False),
    # q2 b2: with v_j = v the output is v
    ("q2", "b2", "v", True),
    ("q2", "b2", "\\boldsymbol{v}", True),
    ("q2", "b2", "$\\mathbf{v}$", True),
    ("q2", "b2", "就是v", True),
    ("q2", "b2", "c_i = v", True),
    ("q2", "b2", "0", False),
    ("q2", "b2", "α v", False),
    ("q2", "b2", "T v", False),
    ("q2", "b2", "平均值", False),
    # q2 b3: an empty valid-key set, now a choice (a keyword regex gave the point to wrong explanations)
    ("q2", "b3", "B", True),
    ("q2", "b3", "b", True),
    ("q2", "b3", "（B）", True),
    ("q2", "b3", "A", False),
    ("q2", "b3", "C", False),
    ("q2", "b3", "D", False),
    # q3: mean and variance of the dot product
    ("q3", "b1", "0", True),
    ("q3", "b1", "0.0", True),
    ("q3", "b1", "０", True),
    ("q3", "b1", "1", False),
    ("q3", "b1", "E(S)=0", True),
    ("q3", "b1", "E[S] = 0", True),
    ("q3", "b1", "Var(S) = 0", False),
    ("q3", "b2", "d_k", True),
    ("q3", "b2", "d_{k}", True),
    ("q3", "b2", "$d_k$", True),
    ("q3", "b2", "1*d_k", True),
    ("q3", "b2", "1", False),
    ("q3", "b2", "sqrt(d_k)", False),
    ("q3", "b2", "d_k^2", False),
    ("q3", "b2", "d_k/2", False),
    ("q3", "b2", "Var(S) = d_k", True),
    ("q3", "b2", "E(S) = d_k", False),
    ("q3", "b3", "1", True),
    ("q3", "b3", "1.0", True),
    ("q3", "b3", "0", False),
    ("q3", "b3", "0.5", False),
    # q4 b1: d_k
    ("q4", "b1", "32", True),
    ("q4", "b1", "３２", True),
    ("q4", "b1", "256/8", True),
    ("q4", "b1", "256", False),
    ("q4", "b1", "2048", False),
    ("q4", "b1", "d/H = 32", True),
    ("q4", "b1", "d_k = 256/8 = 32", True),
    ("q4", "b1", "32维", True),
    ("q4", "b1", "H = 32", False),
    ("q4", "b1", "16", False),
    # q4 b2-b4: shapes
    ("q4", "b2", "8×8×128×32", True),
    ("q4", "b2", "8\\times8\\times128\\times32", True),  # the seed's own spelling
    ("q4", "b2", "$8 \\times 8 \\times 128 \\times 32$", True),
    ("q4", "b2", "8 × 8 × 128 × 32", True),
    ("q4", "b2", "(8, 8, 128, 32)", True),
    ("q4", "b2", "（8，8，128，32）", True),
    ("q4", "b2", "[8,8,128,32]", True),
    ("q4", "b2", "8x8x128x32", True),
    ("q4", "b2", "8×128×8×32", False),
    ("q4", "b2", "8×128×256", False),
    ("q4", "b2", "8×8×128×256", False),
    ("q4", "b3", "8×8×128×128", True),
    ("q4", "b3", "(8, 8, 128, 128)", True),
    ("q4", "b3", "8×128×128", False),
    ("q4", "b3", "8×8×128×32", False),
    ("q4", "b3", "128×128", False),
    ("q4", "b4", "8×128×256", True),
    ("q4", "b4", "(8,128,256)", True),
    ("q4", "b4", "8×8×128×32", False),
    ("q4", "b4", "8×256×128", False),
    # q4 b5: element count, exact
    ("q4", "b5", "1048576", True),
    ("q4", "b5", "1,048,576", True),
    ("q4", "b5", "1 048 576", True),
    ("q4", "b5", "2^20", True),
    ("q4", "b5", "8*8*128*128", True),
    ("q4", "b5", "131072", False),
    ("q4", "b5", "4194304", False),
    ("q4", "b5", "1048000", False),
    # q4 b6: bytes; the prompt says MB (10^6) is not MiB
    ("q4", "b6", "4\\,194\\,304 字节", True),  # the seed's own spelling
    ("q4", "b6", "4 MiB = 4194304 B", True),
    ("q4", "b6", "32 Mib", True),
    ("q4", "b6", "4194304 b", False),
    ("q4", "b6", "4 Mib", False),
    ("q4", "b6", "4194304 B", True),
    ("q4", "b6", "4194304 bytes", True),
    ("q4", "b6", "4 MiB", True),
    ("q4", "b6", "4MiB", True),
    ("q4", "b6", "4096 KiB", True),
    ("q4", "b6", "1048576 B", False),
    ("q4", "b6", "8 MiB", False),
    ("q4", "b6", "4 MB", False),
    # q4 b7-b8: the inside of O(.)
    ("q4", "b7", "B*T^2*d", True),
    ("q4", "b7", "B*d*T**2", True),
    ("q4", "b7", "B T^2 d", True),
    ("q4", "b7", "B·T²·d", True),
    ("q4", "b7", "BT^2d", True),
    ("q4", "b7", "B*T*d^2", False),
    ("q4", "b7", "B*T^2", False),
    ("q4", "b7", "B*H*T^2", False),
    ("q4", "b8", "B*H*T^2", True),
    ("q4", "b8", "H*B*T**2", True),
    ("q4", "b8", "B×H×T²", True),
    ("q4", "b8", "BHT^2", True),
    ("q4", "b8", "B*T^2*d", False),
    ("q4", "b8", "B*T^2", False),
    ("q4", "b8", "T^2", False),
]


# Realistic answers the graders get wrong today; strict, so a grader fix turns them into failures to move into CASES.
KNOWN_GRADER_GAPS: list[object] = []


@pytest.mark.parametrize(("problem", "part", "answer", "expected"), CASES + KNOWN_GRADER_GAPS)
def test_answer(load_set, problem, part, answer, expected):
    result = grade_part(answer, part_spec(load_set(SET_ID), problem, part))
    assert result.correct is expected, f"{problem}.{part} {answer!r}: {result.feedback}"
    assert result.score == (1.0 if expected else 0.0)


def test_set_validates_and_files_exist(load_set):
    problem_set = load_set(SET_ID)
    assert [p.id for p in problem_set.problems] == [f"q{i}" for i in range(1, 11)]
    assert problem_set.language == "zh"
    check_set_files(SET_ID, problem_set)


def test_problem_kinds_and_contracts(load_set):
    problem_set = load_set(SET_ID)
    kinds = {p.id: p.kind for p in problem_set.problems}
    assert kinds == {
        **dict.fromkeys(["q1", "q2", "q3", "q4"], "fill_in"),
        **dict.fromkeys(["q5", "q6", "q7"], "code"),
        **dict.fromkeys(["q8", "q9", "q10"], "manual"),
    }
    entrypoints = {p.id: p.entrypoints for p in problem_set.problems if isinstance(p, CodeProblem)}
    assert entrypoints == {
        "q5": ["scaled_attention"],
        "q6": ["attention_loop", "attention_batched"],
        "q7": ["test_permutation_equivariance"],
    }
    for problem in problem_set.problems:
        if isinstance(problem, CodeProblem):
            assert problem.checks == f"checks/{problem.id}.py"
            assert (problem.limits.time_s, problem.limits.memory_mb) == (10, 1024)
        if isinstance(problem, ManualProblem):
            assert 2 <= len(problem.rubric) <= 4
            assert 4 <= sum(item.points for item in problem.rubric) <= 6
    # The derivations pair their formula blanks with a written argument scored by rubric.
    for problem_id in ("q2", "q3"):
        problem = problem_set.problem(problem_id)
        assert isinstance(problem, FillInProblem)
        assert problem.parts[-1].kind == "essay"
        assert problem.rubric


def test_every_auto_part_has_right_and_wrong_cases(load_set):
    assert not uncovered_auto_parts(load_set(SET_ID), CASES)


def test_yaml_examples_hold(load_set):
    assert not failing_yaml_examples(load_set(SET_ID))
