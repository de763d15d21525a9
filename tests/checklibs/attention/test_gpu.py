"""q5, q6 and q7 graded on CUDA inside the sandbox. Skipped cleanly where there is no GPU (CI never has one)."""

from __future__ import annotations

import pytest
import torch

from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set
from tests.conftest import REPO

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
SET = REPO / "problems" / "attention"


@pytest.mark.parametrize(("problem_id", "solution"), [("q5", "masked_fill.py"), ("q6", "loop_and_matmul.py")])
def test_reference_solutions_get_full_marks_on_cuda(problem_id: str, solution: str) -> None:
    from graders.code.runner import CodeGrader
    from graders.sandbox.config import SandboxConfig

    problem = load_problem_set(SET).spec.problem(problem_id)
    assert isinstance(problem, CodeProblem)
    source = (SET / "solutions" / problem_id / solution).read_text()
    with CodeGrader(SandboxConfig(mode="bwrap", slots=1, device="cuda")) as grader:
        checks = grader.checks(SET, problem.checks)
        result = grader.grade(source=source, problem=problem, checks=checks)
    assert result.score == result.max_score, result.to_dict()
    timing = [c for c in result.checks if c.category == "timing"]
    assert timing and all("timed on cuda" in c.feedback for c in timing)


Q7_ON_CUDA = """
import torch


def test_permutation_equivariance(layer):
    x = torch.randn(2, 6, 4, dtype=torch.float64, device="cuda")
    key_valid = torch.rand(2, 6, device="cuda") < 0.6
    key_valid[:, 0] = True
    perm = torch.randperm(6, device="cuda")
    out = layer(x[:, perm], key_valid[:, perm])
    assert out.device.type == "cuda"
    torch.testing.assert_close(out, layer(x, key_valid)[:, perm])
"""


def test_q7_layers_take_and_return_cuda_tensors_over_reverse_calls() -> None:
    from graders.code.runner import CodeGrader
    from graders.sandbox.config import SandboxConfig

    problem = load_problem_set(SET).spec.problem("q7")
    assert isinstance(problem, CodeProblem)
    with CodeGrader(SandboxConfig(mode="bwrap", slots=1, device="cuda")) as grader:
        checks = grader.checks(SET, problem.checks)
        result = grader.grade(source=Q7_ON_CUDA, problem=problem, checks=checks)
    assert result.score == result.max_score, result.to_dict()
