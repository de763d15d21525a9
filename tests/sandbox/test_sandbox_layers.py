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


THREADED = {
    # The shipped assert_close solution, each layer call made from a second thread.
    "second_thread": """
import threading
import torch


def _in_thread(fn, *args):
    out = []
    thread = threading.Thread(target=lambda: out.append(fn(*args)))
    thread.start()
    thread.join()
    return out[0]


def test_permutation_equivariance(layer):
    g = torch.Generator().manual_seed(0)
    b, t, d = 3, 9, 8
    x = torch.randn(b, t, d, generator=g, dtype=torch.float64)
    key_valid = torch.rand(b, t, generator=g) < 0.6
    key_valid[:, 0] = True
    for _ in range(3):
        perm = torch.randperm(t, generator=g)
        expected = _in_thread(layer, x, key_valid)[:, perm]
        actual = _in_thread(layer, x[:, perm], key_valid[:, perm])
        torch.testing.assert_close(actual, expected)
""",
    # Both calls of each permutation at once, from a pool of threads.
    "thread_pool": """
from concurrent.futures import ThreadPoolExecutor
import torch


def test_permutation_equivariance(layer):
    g = torch.Generator().manual_seed(0)
    b, t, d = 3, 9, 8
    x = torch.randn(b, t, d, generator=g, dtype=torch.float64)
    key_valid = torch.rand(b, t, generator=g) < 0.6
    key_valid[:, 0] = True
    perms = [torch.randperm(t, generator=g) for _ in range(3)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        plain = pool.submit(layer, x, key_valid)
        permuted = list(pool.map(lambda p: layer(x[:, p], key_valid[:, p]), perms))
    for perm, actual in zip(perms, permuted):
        torch.testing.assert_close(actual, plain.result()[:, perm])
""",
}


@pytest.mark.parametrize("style", sorted(THREADED))
def test_an_honest_test_that_calls_its_layer_from_threads_scores_full_marks(grader, style: str) -> None:
    """Calls from other threads (one at a time or at once) are answered one after the other, as from one thread."""
    honest = _grade(grader, (SET / "solutions" / "q7" / "assert_close.py").read_text())
    result = _grade(grader, THREADED[style])
    assert result.score == honest.score == result.max_score, result.to_dict()


def test_a_thread_left_calling_its_layer_after_the_test_returned_breaks_nothing(grader) -> None:
    """A thread that goes on calling the layer after its test returned gets an exception in that thread, and the
    grading goes on: no "corrupted channel", no later check that fails for it, the next submission graded."""
    source = (
        (SET / "solutions" / "q7" / "assert_close.py").read_text()
        + """

import threading as _threading
import time as _time

_honest = test_permutation_equivariance
_started = []


def _keep_calling(layer, x, mask):
    for _ in range(2000):  # through the later calls of the test in this process
        try:
            layer(x, mask)
        except Exception:
            pass
        _time.sleep(0.0005)


def test_permutation_equivariance(layer):
    _honest(layer)
    if not _started:  # one thread per process: a thread each would run into the submission's process limit
        x = torch.randn(1, 4, 8, dtype=torch.float64)
        mask = torch.ones(1, 4, dtype=torch.bool)
        _started.append(_threading.Thread(target=_keep_calling, args=(layer, x, mask), daemon=True))
        _started[0].start()
"""
    )
    result = _grade(grader, source)
    assert result.score == result.max_score, result.to_dict()
    assert not [c.feedback for c in result.checks if "channel" in c.feedback], result.to_dict()
    support.assert_healthy(grader)
