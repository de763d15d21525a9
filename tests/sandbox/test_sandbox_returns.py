"""Return values that must not cross into the checker: refused with a message the student understands."""

from __future__ import annotations

import pytest

from graders.results import Verdict
from tests.sandbox import support

PRELUDE = """
class Sneaky(torch.Tensor):
    pass

class AlwaysEqual:
    def __eq__(self, other):
        return True

class MyStr(str):
    pass
"""

RETURNS = {
    "tensor_subclass": ("torch.ones(1).as_subclass(Sneaky)", "Sneaky"),
    "always_equal": ("AlwaysEqual()", "AlwaysEqual"),
    "str_subclass": ("MyStr('5')", "MyStr"),
    "numpy_array": ("__import__('numpy').ones(2)", "numpy.ndarray"),
    "giant_tensor": ("torch.zeros(100_000_000, dtype=torch.bool)", "elements"),
    "deep_list": ("__import__('functools').reduce(lambda acc, _: [acc], range(500), [])", "nested deeper"),
    "sparse": ("torch.eye(3).to_sparse()", "dense"),
    "meta": ("torch.ones(2, device='meta')", "a meta tensor"),
    "quantized": ("torch.quantize_per_tensor(torch.ones(2), 0.1, 0, torch.quint8)", "a quantized tensor"),
    "nested": ("torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])", "a nested tensor"),
    "generator": ("(i for i in range(3))", "generator"),
    "dict_int_keys": ("{1: 2}", "keys must be strings"),
}


@pytest.mark.parametrize(("expr", "needle"), RETURNS.values(), ids=RETURNS.keys())
def test_bad_return_values_are_refused(grader, expr, needle):
    source = support.attack_source(f"return {expr}", prelude=PRELUDE)
    result = support.grade(grader, source)
    assert result.score < support.FULL_MARKS
    feedback = result.checks[0].feedback
    assert feedback.startswith("add returned "), feedback
    assert needle in feedback
    assert (
        "expected tensors" in feedback
        or needle in ("elements", "nested deeper", "dense", "keys must be strings")
        or (needle.startswith("a ") and "only dense tensors with data" in feedback)
    )
    support.assert_healthy(grader)


def test_only_bad_returns_give_bad_return_type(grader):
    source = support.attack_source("return AlwaysEqual()", prelude=PRELUDE)
    source = source.replace("return torch.softmax(scores, dim=-1) @ v", "return AlwaysEqual()")
    result = support.grade(grader, source)
    assert result.verdict == Verdict.BAD_RETURN_TYPE, result.to_dict()
    assert result.score == 0
