"""q7's layers stay on the trusted side: a student's test can tell them apart only by calling them.

The attacks (``layer_attacks/``) scored 9/9 when the layers were defined in the jail: one read the weight seeds from
``layer.__code__.co_consts`` (and closure cells, ``__dict__``, gc referents), one patched ``builtins.compile`` and
``exec`` to read the layer source the grader sent. With the layers behind opaque proxies they find nothing, and a
test whose answer does not depend on the layer scores exactly half: the equivariant half if it returns, the other
half if it raises. Both attacks return when they find nothing, so "no better than chance" is at most 4.5 of the
layer checks' 9 points; since the layer checks pay only a test that judges two basic layers right (judge_probe),
such a test now scores nothing there.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set
from tests.sandbox import support

SET = support.REPO_ROOT / "problems" / "attention"
ATTACKS = Path(__file__).resolve().parent / "layer_attacks"
CHANCE = 4.5


def _grade(grader, source: str):
    problem = load_problem_set(SET).spec.problem("q7")
    assert isinstance(problem, CodeProblem)
    return grader.grade(source=source, problem=problem, checks=grader.checks(SET, problem.checks))


@pytest.mark.parametrize("attack", ["introspects.py", "reads_sources.py"])
def test_a_test_that_does_not_call_the_layers_scores_no_better_than_chance(grader, attack: str) -> None:
    for _ in range(2):
        result = _grade(grader, (ATTACKS / attack).read_text())
        assert result.max_score == 10.0 and result.score <= CHANCE, result.to_dict()
        passed = {c.name for c in result.checks if c.passed and c.name.startswith("layer_")}
        assert passed <= {"layer_0", "layer_2", "layer_4"}, result.to_dict()  # never a layer it could not judge
    support.assert_healthy(grader)


def test_the_layer_a_test_receives_is_the_same_opaque_object_for_every_layer(grader) -> None:
    """Whatever the test reads off its layer without calling it is the same for all six layers."""
    source = """
import gc

def test_permutation_equivariance(layer):
    refs = sorted(type(r).__name__ for r in gc.get_referents(layer))
    seen = (type(layer).__qualname__, repr(layer), refs, [a for a in dir(layer) if not a.startswith("__")])
    assert seen == ("TrustedCallable", "<function from the grader>", ["str", "type"], ["_handle"]), seen
"""
    result = _grade(grader, source)
    assert result.score <= CHANCE, result.to_dict()
    assert not [c.feedback for c in result.checks if "raised" in c.feedback], result.to_dict()  # returned on all


def test_a_test_that_calls_its_layer_too_often_is_told_so(grader) -> None:
    source = """
import torch

def test_permutation_equivariance(layer):
    x = torch.randn(1, 3, 2)
    for _ in range(100):
        layer(x)
"""
    result = _grade(grader, source)
    assert result.score == 0.0, result.to_dict()
    assert all("more than 64 times in one call" in c.feedback for c in result.checks), result.to_dict()


def test_garbage_arguments_are_a_plain_exception_in_the_test(grader) -> None:
    """The trusted layer refuses them alike for every layer; the test sees TypeError and the grading goes on."""
    source = """
import torch

def test_permutation_equivariance(layer):
    for bad in ((), ("x",), (torch.ones(2, 2),), (torch.ones(1, 2, 2), torch.ones(3))):
        try:
            layer(*bad)
        except (TypeError, ValueError):
            continue
        raise RuntimeError(f"layer{bad!r} was accepted")
    x = torch.randn(2, 4, 3)
    mask = torch.tensor([[True, False, True, True], [False, True, True, True]])
    perm = torch.randperm(4)
    torch.testing.assert_close(layer(x[:, perm], mask[:, perm]), layer(x, mask)[:, perm])
"""
    result = _grade(grader, source)
    assert result.score == result.max_score, result.to_dict()
