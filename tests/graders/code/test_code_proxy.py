"""StudentProxy over the sandbox, driven by small checks written inline."""

from __future__ import annotations

import torch

from graders.code.checks import CheckFailed, CheckSpec, Ref, StudentError
from graders.results import Verdict, Visibility
from tests.sandbox import support

SOURCE = """
import torch

def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v

def detached(x, y):
    return (x.detach() * 2, y * 3)

def boom(x):
    raise ValueError("bad input " + "x" * 5000)

def apply(layer, x):
    return layer(x)

def pair():
    return (1, [2.5, "s"], {"k": None})
"""


def _spec(func, points=1.0, visibility=Visibility.HIDDEN) -> CheckSpec:
    return CheckSpec(func.__name__, func, points, "answer", visibility, 10.0, "")


def _run(grader, *funcs, visibility=Visibility.HIDDEN):
    problem = support.problem(entrypoints=("add", "scaled_attention", "detached", "boom", "apply", "pair"))
    return grader.grade(source=SOURCE, problem=problem, checks=[_spec(f, visibility=visibility) for f in funcs])


def test_call_returns_plain_values(code_grader):
    seen = {}

    def plain(student):
        seen["pair"] = student.call("pair")
        seen["sum"] = student.call("add", a=torch.ones(2), b=torch.ones(2))

    assert _run(code_grader, plain).verdict == Verdict.ACCEPTED
    assert seen["pair"] == (1, [2.5, "s"], {"k": None})
    assert torch.equal(seen["sum"], torch.full((2,), 2.0))


def test_call_with_grad_reports_missing_gradients(code_grader):
    seen = {}

    def grads(student):
        x, y = torch.ones(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64)
        g = torch.ones(3, dtype=torch.float64)
        outputs, found = student.call_with_grad("detached", [x, y], {}, [g, g], [0, 1])
        seen["outputs"], seen["grads"] = outputs, found

    assert _run(code_grader, grads).verdict == Verdict.ACCEPTED
    assert seen["grads"][0] is None  # detached inside the student's function
    assert torch.equal(seen["grads"][1], torch.full((3,), 3.0, dtype=torch.float64))
    assert not seen["outputs"][1].requires_grad


def test_student_exceptions_come_back_as_type_and_truncated_message(code_grader):
    seen = {}

    def raises(student):
        try:
            student.call("boom", 1)
        except StudentError as exc:
            seen["exc"] = exc
            raise CheckFailed("boom raised") from None

    result = _run(code_grader, raises)
    exc = seen["exc"]
    assert exc.type_name == "ValueError" and exc.message.startswith("bad input")
    assert len(exc.message) < 2500 and "line 14, in boom" in exc.message
    assert result.verdict == Verdict.WRONG_ANSWER


def test_uncaught_student_exception_is_a_runtime_error(code_grader):
    result = _run(code_grader, lambda student: student.call("boom", 1), visibility=Visibility.VISIBLE)
    assert result.verdict == Verdict.RUNTIME_ERROR
    assert result.checks[0].feedback.startswith("your function raised ValueError: bad input")
    hidden = _run(code_grader, lambda student: student.call("boom", 1))  # no student text in a hidden check
    assert hidden.verdict == Verdict.RUNTIME_ERROR
    assert hidden.checks[0].feedback == (  # neither the type nor the message: which builtin is ~5.7 bits
        "your function raised an exception (hidden checks show neither its type nor its message)"
    )


def test_define_and_ref(code_grader):
    seen = {}

    def helpers(student):
        student.define("import torch\nlayer = torch.nn.Identity()\ndef double(x):\n    return 2 * x\n")
        seen["layer"] = student.call("apply", Ref("layer"), torch.ones(2))
        seen["fn"] = student.call("apply", Ref("double"), 4)

    assert _run(code_grader, helpers).verdict == Verdict.ACCEPTED
    assert torch.equal(seen["layer"], torch.ones(2)) and seen["fn"] == 8


def test_time_measures_repeats(code_grader):
    seen = {}

    def timing(student):
        t = student.time("add", [torch.ones(100), torch.ones(100)], warmup=1, repeat=4)
        seen["times"] = t.times_s
        assert student.device == "cpu"

    assert _run(code_grader, timing).verdict == Verdict.ACCEPTED
    assert len(seen["times"]) == 4 and all(s > 0 for s in seen["times"])


def test_a_check_catching_everything_cannot_hide_a_dead_process(code_grader):
    def swallow(student):
        try:  # a check that swallows every Exception must still not carry on against a dead process
            student.define("import os\nos._exit(3)")
        except Exception:
            return "swallowed"

    def adds(student):
        assert student.call("add", 1, 2) == 3

    # Visible checks share one child: once it is dead, the next visible check is not run.
    result = _run(code_grader, swallow, adds, visibility=Visibility.VISIBLE)
    assert result.verdict == Verdict.RUNTIME_ERROR
    assert "exit status 3" in result.checks[0].feedback
    assert result.checks[1].feedback.startswith("not run:")
    assert result.max_score == 2.0 and result.score == 0
    # Hidden checks run alone: the second has a child of its own; the first says how its run ended in fixed words.
    hidden = _run(code_grader, swallow, adds)
    assert hidden.verdict == Verdict.RUNTIME_ERROR
    assert hidden.checks[0].feedback == "your code did not finish this check (hidden checks do not say why)"
    assert hidden.checks[1].passed and hidden.score == 1.0


def test_trusted_functions_run_on_one_torch_thread_and_the_setting_comes_back():
    """Nested and interleaved uses (several gradings' threads) restore the count only when the last one ends."""
    from graders.code.proxy import _one_torch_thread

    before = torch.get_num_threads()
    first, second = _one_torch_thread(), _one_torch_thread()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)  # not the last one: still one thread
    assert torch.get_num_threads() == 1
    second.__exit__(None, None, None)
    assert torch.get_num_threads() == before


def test_checks_read_the_submitted_source_on_the_trusted_side(code_grader):
    seen = {}

    def reads(student):
        seen["source"] = student.source

    assert _run(code_grader, reads).verdict == Verdict.ACCEPTED
    assert seen["source"] == SOURCE
