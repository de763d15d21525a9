"""Reverse calls: a TrustedFunction passed to the student's code stays on the trusted side; its calls come back.

The student's process may forge any frame. A reverse call is answered only when well-formed, numbered in order
and within the caps, and only with what the trusted function computes on the decoded arguments; a malformed one
ends the run as a protocol error. The trusted function's errors, arguments the wire cannot carry, nesting and the
call limit reach the student's code as plain exceptions; the call's deadline covers the whole exchange.
"""

from __future__ import annotations

import time

import pytest
import torch

from graders.code.checks import ArgumentRejected, CheckSpec, StudentError, TrustedFunction
from graders.code.proxy import CALLBACK_FAILED, CALLBACK_LIMIT, CALLBACK_STALE, MAX_CALLBACKS
from graders.code.sanitise import DID_NOT_FINISH
from graders.results import Verdict, Visibility
from tests.sandbox import support

CHECK_BLAMED = "an error in the check"

# Student code reaches the child's own server and wire module through the callable's class: all of it is theirs.
SOURCE = """
import gc, threading, time, torch

def _internals(f):
    g = type(f).__call__.__globals__
    return g["_server"], g["wire"]

def apply(f, *args, **kwargs):
    return f(*args, **kwargs)

def add(a, b):
    return a + b

def describe(f, g):
    out = []
    for h in (f, g):
        refs = gc.get_referents(h)
        out.append({
            "type": type(h).__name__, "repr": repr(h),
            "attrs": [a for a in ("__code__", "__closure__", "__dict__", "__wrapped__", "__name__") if hasattr(h, a)],
            "refs": sorted(type(r).__name__ for r in refs),
            "handle": [r for r in refs if type(r) is str],
        })
    return out

def errors(f, *cases):
    out = []
    for args in cases:
        try:
            f(*args)
            out.append(None)
        except Exception as exc:
            out.append([type(exc).__name__, str(exc)])
    return out

def refused_arguments(f):
    out = []
    for arg in (object(), torch.zeros(3_000_000, dtype=torch.float64), f, [f]):
        try:
            f(arg)
            out.append(None)
        except Exception as exc:
            out.append([type(exc).__name__, str(exc)[:200]])
    return out

def loop(f, n):
    seen = []
    for _ in range(n):
        try:
            f(torch.ones(1))
            seen.append("ok")
        except RuntimeError as exc:
            seen.append(str(exc))
    return seen

_kept = []

def keep(f):
    _kept.append(f)
    return f(torch.ones(1))

def call_kept():
    try:
        _kept[0](torch.ones(1))
    except RuntimeError as exc:
        return str(exc)

def concurrently(f):
    found = []
    def other():
        time.sleep(0.05)
        try:
            f(torch.ones(1))
        except RuntimeError as exc:
            found.append(str(exc))
    thread = threading.Thread(target=other)
    thread.start()
    f(torch.ones(1))
    thread.join()
    return found

def forge(f, kind):
    server, wire = _internals(f)
    handle = [r for r in gc.get_referents(f) if type(r) is str][0]
    def args(*nodes):
        return {"t": "tuple", "v": list(nodes)}

    msg = {"op": wire.CALLBACK, "id": server.request_id, "seq": server.callbacks + 1, "h": handle,
           "args": args({"t": "tensor", "dtype": "float32", "shape": [2], "b": 0, "dev": "cpu"}),
           "kwargs": {"t": "dict", "v": []}}
    buffers = [torch.ones(2).numpy()]
    if kind == "wrong_id":
        msg["id"] = "0" * 16
    elif kind == "wrong_seq":
        msg["seq"] = 5
    elif kind == "oversized":
        # 17 MiB: under the element cap, over the bytes of codec.CALLBACK_CAPS (the honest proxy refuses it)
        msg["args"] = args({"t": "tensor", "dtype": "float64", "shape": [17 << 17], "b": 0, "dev": "cpu"})
        buffers = [bytes(17 << 20)]
    elif kind == "nested":
        msg["args"], buffers = args({"t": "fn", "h": handle}), []
    elif kind == "ref":
        msg["args"], buffers = args({"t": "ref", "n": "submission"}), []
    elif kind == "not_a_tuple":
        msg["args"], buffers = {"t": "list", "v": []}, []
    elif kind == "past_the_limit":
        for _ in range(100):
            try:
                f(torch.ones(1))
            except RuntimeError:
                pass
        msg["seq"] = server.callbacks + 1  # the child's proxy stopped sending at the limit: only a forger goes on
    wire.write_all(4, wire.encode_frame(msg, buffers))
    frame = wire.read_frame_blocking(3, server.reader)
    if frame is None:
        return None
    return torch.frombuffer(frame.buffers[0], dtype=torch.float32).tolist() if frame.msg.get("ok") else frame.msg
"""
ENTRYPOINTS = ("apply", "add", "describe", "errors", "refused_arguments", "loop", "keep", "call_kept")
ENTRYPOINTS += ("concurrently", "forge")


def _spec(func, points: float = 1.0) -> CheckSpec:
    return CheckSpec(func.__name__, func, points, "answer", Visibility.HIDDEN, 20.0, "")


def _grade(grader, *funcs, **limits: float):
    problem = support.problem(entrypoints=ENTRYPOINTS, **limits)
    return grader.grade(source=SOURCE, problem=problem, checks=[_spec(f) for f in funcs])


def _counting(fn=lambda x: 2 * x):
    calls: list[object] = []

    def counted(*args, **kwargs):
        calls.append((args, kwargs))
        return fn(*args, **kwargs)

    return TrustedFunction(counted), calls


def _accepted(result) -> None:
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()


def test_a_trusted_function_runs_on_the_trusted_side(grader) -> None:
    seen = {}
    threads: list[int] = []
    double, calls = _counting(lambda x: threads.append(torch.get_num_threads()) or 2 * x)
    before = torch.get_num_threads()

    def check(student):
        seen["positional"] = student.call("apply", double, torch.arange(3.0))
        seen["keyword"] = student.call("apply", double, x=torch.ones(2, dtype=torch.float64))

    _accepted(_grade(grader, check))
    assert torch.equal(seen["positional"], torch.tensor([0.0, 2.0, 4.0]))
    assert seen["keyword"].dtype == torch.float64 and torch.equal(seen["keyword"], torch.full((2,), 2.0).double())
    assert len(calls) == 2 and type(calls[0][0][0]) is torch.Tensor and set(calls[1][1]) == {"x"}
    assert threads == [1, 1] and torch.get_num_threads() == before  # one torch thread while it runs, then restored


def test_the_callable_in_the_jail_is_opaque_and_its_handle_fresh_per_call(grader) -> None:
    seen = []
    f, g = TrustedFunction(lambda x: x), TrustedFunction(lambda x: -x)

    def check(student):
        seen.extend(student.call("describe", f, g))
        seen.extend(student.call("describe", f, f))

    _accepted(_grade(grader, check))
    handles = [d.pop("handle") for d in seen]
    assert all(d == seen[0] for d in seen), seen  # one type, one repr, the same (empty) insides for all
    assert seen[0]["type"] == "TrustedCallable" and seen[0]["repr"] == "<function from the grader>"
    assert seen[0]["attrs"] == [] and seen[0]["refs"] == ["str", "type"]
    flat = [h[0] for h in handles]
    assert len(set(flat)) == 4 and all(len(h) == 16 for h in flat)  # the same function twice: two handles


def test_errors_of_a_trusted_function_reach_the_student_as_plain_exceptions(grader) -> None:
    seen = {}

    def trusted(kind):
        if kind == "rejected":
            raise ArgumentRejected("x must be a tensor", type_name="TypeError")
        if kind == "value":
            raise ArgumentRejected("x is too long")
        if kind == "crash":
            return 1 / 0
        if kind == "unsendable":
            return object()
        return kind

    def check(student):
        seen["errors"] = student.call(
            "errors", TrustedFunction(trusted), ("rejected",), ("value",), ("crash",), ("unsendable",), ("fine",)
        )

    _accepted(_grade(grader, check))
    assert seen["errors"] == [
        ["TypeError", "x must be a tensor"],
        ["ValueError", "x is too long"],
        ["RuntimeError", CALLBACK_FAILED],
        ["RuntimeError", CALLBACK_FAILED],
        None,
    ]


def test_arguments_the_wire_cannot_carry_and_nested_functions_are_refused_in_the_jail(grader) -> None:
    seen = {}
    f, calls = _counting()
    slow, slow_calls = _counting(lambda x: time.sleep(0.3))

    def check(student):
        seen["refused"] = student.call("refused_arguments", f)
        seen["concurrent"] = student.call("concurrently", slow)

    _accepted(_grade(grader, check))
    assert [r[0] for r in seen["refused"]] == ["TypeError"] * 4, seen
    assert "16 MiB" in seen["refused"][1][1] and "TrustedCallable" in seen["refused"][2][1]
    assert calls == []  # the trusted function never ran on any of them
    # A call from a second thread while the first is in flight waits for it (a test's thread pool works).
    assert seen["concurrent"] == [] and len(slow_calls) == 2


def test_a_trusted_function_may_not_call_the_student(grader) -> None:
    seen = {}

    def check(student):
        def reenter(x):
            return student.call("add", x, x)

        seen["errors"] = student.call("errors", TrustedFunction(reenter), (1,))

    def still_works(student):
        assert student.call("add", 2, 3) == 5

    result = _grade(grader, check, still_works)
    assert CHECK_BLAMED in result.checks[0].feedback, result.to_dict()
    assert "errors" not in seen  # the call's outcome is the check's mistake, not what the student returned
    assert result.checks[1].passed, result.to_dict()


def test_too_many_calls_fail_clearly_and_the_next_check_runs(grader) -> None:
    seen = {}
    f, calls = _counting()

    def check(student):
        try:
            student.call("loop", f, 3 * MAX_CALLBACKS)
        except StudentError as err:
            seen["error"] = err
            raise

    def still_works(student):
        assert student.call("loop", f, 3) == ["ok"] * 3

    result = _grade(grader, check, still_works)
    assert seen["error"].type_name == "RuntimeError" and seen["error"].message == CALLBACK_LIMIT
    assert "more than 64 times in one call" in result.checks[0].feedback, result.to_dict()
    assert result.checks[1].passed and len(calls) == MAX_CALLBACKS + 3, result.to_dict()


def test_a_function_kept_for_a_later_call_is_refused_there(grader) -> None:
    seen = {}
    f, calls = _counting()

    def check(student):
        student.call("keep", f)
        seen["later"] = student.call("call_kept")

    _accepted(_grade(grader, check))
    assert seen["later"] == CALLBACK_STALE and len(calls) == 1


def test_the_calls_deadline_covers_its_reverse_calls(grader) -> None:
    slow, calls = _counting(lambda x: time.sleep(0.3) or x)

    def check(student):
        student.call("loop", slow, 20)

    result = _grade(grader, check, time_s=1)
    assert result.verdict == Verdict.TIMEOUT, result.to_dict()
    # A hidden check's run end is told without its cause (sanitise.TrustedText.ended); the verdict says timeout.
    assert result.message == DID_NOT_FINISH and 2 <= len(calls) <= 5
    support.assert_healthy(grader)


def test_a_well_formed_forged_reverse_call_gets_only_what_the_function_computes(grader) -> None:
    seen = {}
    f, calls = _counting(lambda x: x + 1)

    def check(student):
        seen["reply"] = student.call("forge", f, "well_formed")

    _accepted(_grade(grader, check))
    assert seen["reply"] == [2.0, 2.0] and len(calls) == 1


MALFORMED = ["wrong_id", "wrong_seq", "oversized", "nested", "ref", "not_a_tuple", "past_the_limit"]


@pytest.mark.parametrize("kind", MALFORMED)
def test_a_malformed_forged_reverse_call_ends_the_run(grader, kind: str) -> None:
    f, calls = _counting()

    def check(student):
        student.call("forge", f, kind)

    result = _grade(grader, check)
    assert result.verdict == Verdict.RUNTIME_ERROR and result.message == DID_NOT_FINISH, result.to_dict()
    assert len(calls) == (MAX_CALLBACKS if kind == "past_the_limit" else 0)
    support.assert_healthy(grader)


def test_the_child_refuses_a_stale_handle_in_the_trusted_sides_words() -> None:
    """A thread still calling after its request ended is refused in the child, with the words the grader uses."""
    from graders.sandbox import child

    assert child.STALE_HANDLE == CALLBACK_STALE
