"""StudentProxy over the sandbox: each method is one round trip to the jailed child (graders.code.checks).

Who is to blame for a failure is decided here, on the trusted side, by where it happened: a request the check
should not have made is refused *before* it is sent (CheckUsageError, the instructor's mistake), and whatever the
student's child answers is the student's doing. Once student code has run, the child's process is the student's:
it can forge any reply, so no reply from it can put the blame on the grader.
"""

from __future__ import annotations

import ast
import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Callable, Collection, Iterator
from typing import Any

import torch

from graders.code.checks import (
    ArgumentRejected,
    CheckUsageError,
    GraderWordedError,
    Ref,
    StudentError,
    TimedCall,
    Timing,
    TimingSession,
    TrustedFunction,
)
from graders.code.reverse_budget import BUDGET_SPENT, ReverseBudget, ThreadCpu
from graders.sandbox import codec
from graders.sandbox.errors import RunEnded, WireError
from graders.sandbox.student_process import PROTOCOL_MESSAGE, StudentProcess
from graders.sandbox.wire import Frame


class BadReturnValue(StudentError):
    """The student's function returned something that may not cross the boundary (a subclass, an object...)."""

    def __init__(self, message: str) -> None:
        super().__init__("BadReturnType", message)


MALFORMED_REPLY = "the submission's process sent a malformed reply"
TYPE_CHARS, TEXT_CHARS = 100, 500
ReferenceFactory = Callable[[], contextlib.AbstractContextManager[StudentProcess]]
log = logging.getLogger(__name__)

# Reverse calls: how often the student's code may call the TrustedFunctions of one call, and what it is told.
MAX_CALLBACKS = 64
CALLBACK_LIMIT = f"called a function from the grader more than {MAX_CALLBACKS} times in one call (the limit)"
CALLBACK_FAILED = "the function from the grader could not compute a result for these arguments"
CALLBACK_STALE = "this function from the grader can only be called during the call that passed it to your code"


class CheckBudgetExceeded(Exception):
    """The check's own time budget ran out before it made its next call."""


def _ref_name(value: Any) -> str | None:
    return value.name if type(value) is Ref else None


class _Callbacks:
    """The TrustedFunctions of one call, each under a fresh random handle, and what the student did with them."""

    def __init__(self) -> None:
        self.functions: dict[str, Callable[..., Any]] = {}
        self.calls = 0
        self.refusal: str | None = None  # the "limit" answer given (the call's limit or the submission's budget)
        self.check_error: CheckUsageError | None = None

    def handle_of(self, value: Any) -> str | None:
        if type(value) is not TrustedFunction:
            return None
        handle = secrets.token_hex(8)  # says nothing about the function: a new one for every argument of every call
        self.functions[handle] = value.fn
        return handle

    def misuse(self) -> BaseException | None:
        """What the call's outcome must be instead of the child's reply: the check's mistake, or the limit."""
        if self.check_error is not None:
            return self.check_error
        if self.refusal is not None:
            return GraderWordedError("RuntimeError", self.refusal)
        return None


def _refusal(type_name: str, message: str) -> tuple[dict[str, Any], list[Any]]:
    return {"error": "raised", "type": type_name, "message": message}, []


_threads_lock = threading.Lock()
_threads_saved: list[int] = []  # torch's thread count before the outermost of the reverse calls now running


@contextlib.contextmanager
def _one_torch_thread() -> Iterator[None]:
    """Run a TrustedFunction on one torch thread, as the jail runs student code.

    Reverse calls run trusted code many times on small tensors, where waking torch's intra-op threads costs far
    more than the work: a q7 layer call took ~70 ms instead of ~0.3 ms on a loaded 2-core machine. The setting is
    process-wide, so nested and concurrent uses (other gradings' threads) restore it only when the last one ends.
    """
    with _threads_lock:
        _threads_saved.append(torch.get_num_threads())
        torch.set_num_threads(1)
    try:
        yield
    finally:
        with _threads_lock:
            before = _threads_saved.pop()
            if not _threads_saved:
                torch.set_num_threads(before)


def fresh_inputs(value: Any) -> Any:
    """A copy of an argument tree whose floating-point tensors carry fresh tiny relative noise.

    Sent anew for every timed run, so a submission cannot answer from a cache keyed on id(), ``_version`` or content;
    the noise (~1e-7 relative, a few ulps for low precision) does not change what is computed in any meaningful way.
    """
    t = type(value)
    if t is torch.Tensor:
        if not (value.is_floating_point() or value.is_complex()):
            return value.clone()
        with torch.no_grad():
            real = value.real if value.is_complex() else value
            work = torch.float64 if real.dtype == torch.float64 else torch.float32
            scale = max(1e-7, 4 * torch.finfo(real.dtype).eps)
            noise = torch.randn(value.shape, dtype=work, device=value.device)
            if value.is_complex():
                return value * (1 + scale * noise).to(real.dtype)
            return (value.to(work) * (1 + scale * noise)).to(value.dtype)
    if t is tuple or t is list:
        return t(fresh_inputs(x) for x in value)
    if t is dict:
        return {k: fresh_inputs(x) for k, x in value.items()}
    return value


class SandboxProxy:
    """The StudentProxy handed to checks; one instance per check, bound to that check's time budget.

    Args:
        process: the submission's jailed child.
        call_limit_s: the problem's per-call wall-clock limit (limits.time_s).
        check_limit_s: the check's whole budget (check.timeout_s), counted from construction.
        device: where the child keeps tensors ("cpu" or "cuda").
        source: the submission's source text, for checks that read it (``source``); never executed here.
        budget: what the submission's reverse calls may still cost the trusted side, shared by all its checks.
    """

    def __init__(
        self,
        process: StudentProcess,
        *,
        call_limit_s: float,
        check_limit_s: float,
        device: str,
        caps: codec.Caps,
        reference: ReferenceFactory | None = None,
        entrypoints: Collection[str] | None = None,
        source: str | None = None,
        budget: ReverseBudget | None = None,
    ) -> None:
        self.device = device
        self.budget = budget if budget is not None else ReverseBudget()
        self._source = source
        self._process, self._caps, self._reference = process, caps, reference
        # The functions a check may call: the problem's entrypoints, whose presence the load already checked.
        self._entrypoints = frozenset(entrypoints) if entrypoints is not None else None
        self._call_limit_s, self._check_limit_s = call_limit_s, check_limit_s
        self._deadline = time.monotonic() + check_limit_s
        self._answering = False  # a TrustedFunction is running: it may not call the student (no nested calls)

    @property
    def source(self) -> str | None:
        """The submission's source as the grader received it (trusted-side copy; None if not given)."""
        return self._source

    def restart_budget(self) -> None:
        """Count the check's budget from now: the grader's own start-up before the check ran is not the check's."""
        self._deadline = time.monotonic() + self._check_limit_s

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self._check_name(name)
        callbacks = _Callbacks()
        tree, buffers = self._encode((args, kwargs), callbacks)
        msg = {"op": "call", "name": name, "args": tree["v"][0], "kwargs": tree["v"][1]}
        return self._decode(self._request(msg, buffers, callbacks=callbacks))

    def define(self, source: str) -> None:
        names = _top_level_names(source)
        self._request({"op": "define"}, [source.encode()])
        self._process.helpers |= names

    def call_with_grad(
        self, name: str, args: list[Any], kwargs: dict[str, Any], grad_outputs: list[Any], wrt: list[int]
    ) -> tuple[Any, list[Any]]:
        self._check_name(name)
        _check_wrt(args, wrt)
        callbacks = _Callbacks()
        tree, buffers = self._encode((tuple(args), dict(kwargs), list(grad_outputs)), callbacks)
        a, k, g = tree["v"]
        msg = {"op": "call", "name": name, "args": a, "kwargs": k, "grad": {"wrt": list(wrt), "grad_outputs": g}}
        value = self._decode(self._request(msg, buffers, callbacks=callbacks))
        if type(value) is not tuple or len(value) != 2 or type(value[1]) not in (list, tuple):
            raise self._process.end_run("protocol", MALFORMED_REPLY)
        outputs, grads = value
        if len(grads) != len(wrt) or not all(g is None or type(g) is torch.Tensor for g in grads):
            raise self._process.end_run("protocol", MALFORMED_REPLY)
        return outputs, list(grads)

    def time(
        self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, *, warmup: int = 2, repeat: int = 5
    ) -> Timing:
        self._check_name(name)
        return self._time(self._process, name, args, kwargs or {}, warmup, repeat)

    def time_reference(
        self,
        source: str,
        name: str,
        args: list[Any],
        kwargs: dict[str, Any] | None = None,
        *,
        warmup: int = 2,
        repeat: int = 5,
    ) -> Timing:
        if self._reference is None:
            raise CheckUsageError("time_reference is not available without a slot to spawn the reference in")
        with self._reference() as ref:
            try:
                self._load_reference(ref, source, name)
                return self._time(ref, name, args, kwargs or {}, warmup, repeat)
            except RunEnded as exc:  # the reference's own process ended: the instructor's code, not the student's
                raise CheckUsageError(f"the reference code's process ended: {exc.message}") from None
            except StudentError as exc:
                raise CheckUsageError(f"the reference code raised {exc}") from None

    @contextlib.contextmanager
    def timing_session(self, source: str, name: str) -> Iterator[TimingSession]:
        """One clean reference child for the whole session; the student is stopped whenever the reference runs.

        The reference child is spawned (and ``source`` loaded) while the student is stopped, then every request
        alternates between the two processes as the check asks: the student is resumed before each of its own
        timed calls and stopped again before each reference call, so it can never run beside the reference. On
        exit the reference child is killed and wiped and the student resumed, whatever happened.
        """
        if self._reference is None:
            raise CheckUsageError("timing_session is not available without a slot to spawn the reference in")
        with self._reference() as ref:  # the student is stopped from here until the session resumes it
            try:
                self._load_reference(ref, source, name)
            except RunEnded as exc:
                raise CheckUsageError(f"the reference code's process ended: {exc.message}") from None
            yield _SandboxTimingSession(self, ref, name)

    def _load_reference(self, ref: StudentProcess, source: str, name: str) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise CheckBudgetExceeded(f"ran past the check's {self._check_limit_s:g} s limit")
        reply = ref.request({"op": "load"}, [source.encode()], min(remaining, self._call_limit_s)).msg
        if reply.get("ok") is not True:
            detail = f"{reply.get('error')}: {str(reply.get('type', ''))[:TYPE_CHARS]} {reply.get('message')!s}"
            raise CheckUsageError(f"the reference source did not load ({detail[:TEXT_CHARS]})")
        if name not in (reply.get("names") or []):
            raise CheckUsageError(f"the reference source defines no function named {name!r}")

    def _time(
        self, process: StudentProcess, name: str, args: list[Any], kwargs: dict[str, Any], warmup: int, repeat: int
    ) -> Timing:
        """Each run is one ordinary ``call`` round trip with freshly perturbed inputs, timed on this side."""
        times: list[float] = []
        for i in range(warmup + repeat):
            tree, buffers = self._encode(fresh_inputs((tuple(args), dict(kwargs))))
            msg = {"op": "call", "name": name, "args": tree["v"][0], "kwargs": tree["v"][1]}
            start = time.perf_counter()  # wall clock around the whole round trip, inputs already encoded
            self._request(msg, buffers, process)
            elapsed = time.perf_counter() - start
            if i >= warmup:
                times.append(elapsed)
        return Timing(times)

    def _check_name(self, name: str) -> None:
        if self._entrypoints is not None and name not in self._entrypoints:
            raise CheckUsageError(f"the check called {name!r}, which is not one of the problem's entrypoints")

    def _ref_of(self, value: Any) -> str | None:
        name = _ref_name(value)
        if name is not None and name not in self._process.helpers:
            raise CheckUsageError(f"Ref({name!r}) names nothing the check defined with student.define()")
        return name

    def _encode(self, value: Any, callbacks: _Callbacks | None = None) -> tuple[Any, list[Any]]:
        fn_of = callbacks.handle_of if callbacks is not None else None
        try:
            return codec.encode_value(value, self._caps, ref_of=self._ref_of, fn_of=fn_of)
        except codec.ValueRefused as exc:
            raise TypeError(f"the check passed a value the sandbox cannot carry: {exc}") from None

    def _request(
        self,
        msg: dict[str, Any],
        buffers: list[Any],
        process: StudentProcess | None = None,
        *,
        callbacks: _Callbacks | None = None,
    ) -> Frame:
        if self._answering:
            raise CheckUsageError("a TrustedFunction called the student's code: reverse calls cannot nest")
        process = process or self._process
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise CheckBudgetExceeded(f"ran past the check's {self._check_limit_s:g} s limit")
        if remaining < self._call_limit_s:
            timeout, limit = remaining, self._check_limit_s
        else:
            timeout, limit = self._call_limit_s, self._call_limit_s
        on_callback = None if callbacks is None else lambda frame: self._answer_callback(callbacks, frame)
        frame = process.request(msg, buffers, timeout, limit_s=limit, on_callback=on_callback)
        misuse = callbacks.misuse() if callbacks is not None else None
        if misuse is not None:
            raise misuse
        reply = frame.msg
        if reply.get("ok") is True:
            return frame
        error = reply.get("error")
        message = str(reply.get("message", ""))[:TEXT_CHARS]
        if error == "raised":
            where = str(reply.get("where", ""))[:TEXT_CHARS]
            type_name = str(reply.get("type", "Exception"))[:TYPE_CHARS]
            raise StudentError(type_name, f"{message} ({where})" if where else message)
        if error == "bad_return":
            raise BadReturnValue(f"{str(msg.get('name', 'your function'))[:TYPE_CHARS]} returned {message}")
        if error == "usage" and process is not self._process:
            raise CheckUsageError(message)  # the reference child runs only instructor code
        # Every request to the student's child was checked above before it was sent, so a "usage" answer (or
        # anything else) from it is the submission interfering with the grader, never the check's mistake.
        raise process.end_run("protocol", PROTOCOL_MESSAGE)

    def _answer_callback(self, callbacks: _Callbacks, frame: Frame) -> tuple[dict[str, Any], list[Any]]:
        """One reverse call of the student's code: the TrustedFunction's result on the decoded arguments, or a refusal.

        The frame is the student's to forge: one that is malformed, over ``codec.CALLBACK_CAPS`` or past the limit
        (which the child's own proxy never sends) ends the run; a well-formed one is answered with what the
        function computes or a refusal, never with anything else. The function's errors reach the student as a
        plain exception (``ArgumentRejected``'s message, else one fixed message), never as the check's failure.
        What answering costs this side (its CPU, the checker's, the bytes) is charged to the submission's
        ``ReverseBudget``; once that is spent, the call is refused like one past its limit.
        """
        size = sum(len(b) for b in frame.buffers)
        if size > codec.CALLBACK_CAPS.max_bytes:
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE)
        if callbacks.refusal is not None:  # after the "limit" answer the child refuses every call itself
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE)
        callbacks.calls += 1
        if callbacks.calls > MAX_CALLBACKS:
            callbacks.refusal = CALLBACK_LIMIT
        elif self.budget.spent():
            callbacks.refusal = BUDGET_SPENT
        if callbacks.refusal is not None:
            return {"error": "limit", "message": callbacks.refusal}, []
        self.budget.charge_bytes(size)
        with ThreadCpu(self.budget):
            reply, buffers = self._answer_allowed(callbacks, frame)
        self.budget.charge_bytes(sum(memoryview(b).nbytes for b in buffers))
        return reply, buffers

    def _answer_allowed(self, callbacks: _Callbacks, frame: Frame) -> tuple[dict[str, Any], list[Any]]:
        handle = frame.msg.get("h")
        fn = callbacks.functions.get(handle) if type(handle) is str else None
        tree = {"t": "tuple", "v": [frame.msg.get("args"), frame.msg.get("kwargs")]}
        try:  # one decoder for both, so that they share the caps and cannot share a buffer
            args, kwargs = codec.decode_value(tree, frame.buffers, codec.CALLBACK_CAPS, device=self._device_for)
        except WireError:
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE) from None
        if type(args) is not tuple or type(kwargs) is not dict:
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE)
        if fn is None:
            return _refusal("RuntimeError", CALLBACK_STALE)
        self._answering = True
        try:
            with _one_torch_thread():
                out = fn(*args, **kwargs)
        except ArgumentRejected as exc:
            return _refusal(exc.type_name, exc.message[:TEXT_CHARS])
        except CheckUsageError as exc:
            callbacks.check_error = callbacks.check_error or exc
            return _refusal("RuntimeError", CALLBACK_FAILED)
        except Exception as exc:
            log.debug("a TrustedFunction raised %s on the student's arguments", type(exc).__name__)
            return _refusal("RuntimeError", CALLBACK_FAILED)
        finally:
            self._answering = False
        try:
            tree, buffers = codec.encode_value(out, codec.CALLBACK_CAPS)
        except codec.ValueRefused:
            log.debug("a TrustedFunction returned a value the wire cannot carry back")
            return _refusal("RuntimeError", CALLBACK_FAILED)
        return {"ok": True, "value": tree}, buffers

    def peek(self, frame: Frame) -> tuple[bool, Any]:
        """``(True, value)`` where ``_decode`` would return the value; ``(False, None)`` where it would end the run,
        which this leaves to a later ``_decode`` (a timed call's result is judged only when the check reads it)."""
        if "value" not in frame.msg:
            return False, None
        try:
            return True, codec.decode_value(frame.msg["value"], frame.buffers, self._caps, device=self._device_for)
        except WireError:
            return False, None

    def _decode(self, frame: Frame) -> Any:
        if "value" not in frame.msg:
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE)
        try:
            return codec.decode_value(frame.msg["value"], frame.buffers, self._caps, device=self._device_for)
        except WireError:
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE) from None

    def _device_for(self, kind: str) -> torch.device:
        return torch.device("cuda" if kind == "cuda" and torch.cuda.is_available() else "cpu")


class _SandboxTimingSession:
    """The TimingSession of SandboxProxy.timing_session: timed round trips to the student's child or the reference's.

    Each timed call is one ``call`` request whose arguments were encoded before the clock starts. What is timed is
    the work (``_measured``): on a CPU worker the CPU time the called child's processes used during the round trip,
    read here from its cgroup or its process CPU clock (never from the child, which could forge it), so that load
    beside the run, which only delays it, and a sleep in it, which uses no CPU, neither earn nor lose a timing point;
    on a GPU worker the wall time, as the child waits for its kernels before it replies. The student's reply is kept
    as received and decoded only when the check asks for it, so nothing after a call depends on what it returned
    (a set's checker gets it with the timing: ``checker/host._Run`` decodes it at once and keeps nothing).
    """

    def __init__(self, proxy: SandboxProxy, ref: StudentProcess, name: str) -> None:
        self._proxy, self._ref, self._name = proxy, ref, name
        self._student_stopped = True  # the reference child was spawned while the student was stopped

    def _measured(self, process: StudentProcess, msg: dict[str, Any], buffers: list[Any]) -> tuple[Frame, float, float]:
        """One round trip to ``process``: its reply, the work it took (see the class) and its wall time."""
        by_cpu = self._proxy.device != "cuda"
        cpu_before = process.cpu_seconds() if by_cpu else None
        start = time.perf_counter()
        frame = self._proxy._request(msg, buffers, process)
        wall = time.perf_counter() - start
        cpu_after = process.cpu_seconds() if cpu_before is not None else None
        if cpu_before is None or cpu_after is None:
            return frame, wall, wall  # no CPU clock to read (a GPU worker): the wall time, as before
        return frame, max(cpu_after - cpu_before, 0.0), wall

    def student(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> TimedCall:
        return self.student_call(name, args, kwargs)[0]

    def student_call(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> tuple[TimedCall, Frame]:
        """``student``, and the reply as received (the checker's host sends a readable result on with the time)."""
        proxy = self._proxy
        proxy._check_name(name)
        tree, buffers = proxy._encode((tuple(args), dict(kwargs or {})))
        msg = {"op": "call", "name": name, "args": tree["v"][0], "kwargs": tree["v"][1]}
        if self._student_stopped:
            proxy._process.resume()
            self._student_stopped = False
        frame, work, wall = self._measured(proxy._process, msg, buffers)
        return TimedCall(work, lambda: proxy._decode(frame), wall), frame

    def reference(self, args: list[Any], kwargs: dict[str, Any] | None = None) -> float:
        proxy = self._proxy
        tree, buffers = proxy._encode((tuple(args), dict(kwargs or {})))
        msg = {"op": "call", "name": self._name, "args": tree["v"][0], "kwargs": tree["v"][1]}
        if not self._student_stopped:
            proxy._process.pause()  # a submission that cannot be stopped is killed (RunEnded, the student's)
            self._student_stopped = True
        try:
            _, work, _ = self._measured(self._ref, msg, buffers)
        except RunEnded as exc:  # the reference's own process ended: the instructor's code, not the student's
            raise CheckUsageError(f"the reference code's process ended: {exc.message}") from None
        except StudentError as exc:
            raise CheckUsageError(f"the reference code raised {exc}") from None
        return work


def _top_level_names(source: str) -> set[str]:
    """The names a helper source defines at its top level (functions, classes, assignments)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return names


def _check_wrt(args: list[Any], wrt: list[int]) -> None:
    """What the child would refuse, refused here: gradients only reach floating-point tensor arguments."""
    for i in wrt:
        if type(i) is not int or not 0 <= i < len(args):
            raise CheckUsageError(f"wrt must list positional argument indices; got {i!r}")
        arg = args[i]
        if type(arg) is not torch.Tensor or not (arg.is_floating_point() or arg.is_complex()):
            raise CheckUsageError(f"argument {i} is not a floating-point tensor; no gradient can reach it")


__all__ = ["BadReturnValue", "CheckBudgetExceeded", "CheckUsageError", "RunEnded", "SandboxProxy"]
