"""The jailed child: receives the student's source as bytes, runs it in a fresh module, serves calls, exits.

Everything here runs after lock_down, beside student code that may have patched anything in this process: the
child only ever reports data (values, exception type and message); the trusted side decides what it means.

A function the trusted side hands the student (a function handle in a call's arguments) becomes a
``TrustedCallable``: calling it sends a reverse call (``wire.CALLBACK``) and blocks until the trusted side answers
with what the function computed there. Nothing of the function itself is ever here.
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import os
import random
import sys
import threading
import time
import traceback
import types
from collections.abc import Callable
from typing import Any

import torch

from graders.sandbox import codec, lockdown, wire
from graders.sandbox.errors import WireError

SUBMISSION_FILE = "submission.py"
MESSAGE_CHARS = 2000
OUTSIDE_A_REQUEST = "a function from the grader can only be called while the grader calls your code"
# The words of graders.code.proxy.CALLBACK_STALE, which the trusted side answers to a forged stale handle.
STALE_HANDLE = "this function from the grader can only be called during the call that passed it to your code"


class Usage(Exception):
    """The check asked for something impossible (an instructor error, reported as such)."""


# What a trusted function's refusal may be raised as in student code; anything else becomes a RuntimeError.
_REFUSAL_TYPES: dict[str, type[Exception]] = {"TypeError": TypeError, "ValueError": ValueError}


class TrustedCallable:
    """A function of the trusted side, as the student's code holds it: calls go back over the pipe.

    Opaque on purpose (a q7 test must not tell layers apart without calling them): one type and one repr for every
    function, no code, closure, source or ``__dict__`` of its own; the only state is the random handle the trusted
    side chose for this call, which says nothing about the function behind it.
    """

    __slots__ = ("_handle",)

    def __init__(self, handle: str) -> None:
        self._handle = handle

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if _server is None:
            raise RuntimeError(OUTSIDE_A_REQUEST)
        return _server.reverse_call(self._handle, args, kwargs)

    def __repr__(self) -> str:
        return "<function from the grader>"


_server: Server | None = None


def _exception_reply(exc: BaseException) -> dict[str, Any]:
    try:
        message = str(exc)[:MESSAGE_CHARS]
    except BaseException:
        message = "<the exception's message could not be printed>"
    where = ""
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        if frame.f_code.co_filename == SUBMISSION_FILE:
            where = f"line {lineno}, in {frame.f_code.co_name}"
    return {"error": "raised", "type": type(exc).__name__[:200], "message": message, "where": where}


def _tensors_in(value: Any) -> list[torch.Tensor]:
    """The tensors of an output, depth first, in the order grad_outputs refer to them."""
    if type(value) is torch.Tensor:
        return [value]
    if type(value) in (list, tuple):
        return [t for item in value for t in _tensors_in(item)]
    if type(value) is dict:
        return [t for item in value.values() for t in _tensors_in(item)]
    return []


class FreshState:
    """The random generators as a fresh child has them, taken before any student code ran; every load restores them.

    A child that serves several hidden checks loads the source anew for each (a fresh module, no helpers), and this
    puts torch's, Python's and numpy's generators back where a child of its own would have them, so that code whose
    answers depend on random draws (a student's test drawing a permutation, say) sees the same draws as it did when
    every hidden check had a fresh child. The setters are kept now, before student code could patch them; what the
    student's code does to them later only changes its own results.
    """

    def __init__(self) -> None:
        self._torch = torch.random.get_rng_state()
        self._set_torch = torch.random.set_rng_state
        self._seed = torch.initial_seed()
        self._cuda_seed_all = torch.cuda.manual_seed_all
        self._cuda_ready = torch.cuda.is_initialized
        self._python = random.getstate()
        self._set_python = random.setstate
        numpy = sys.modules.get("numpy")
        self._numpy = (numpy.random.get_state(), numpy.random.set_state) if numpy is not None else None

    def restore(self) -> None:
        with contextlib.suppress(Exception):  # patched by an earlier load of the same source: its own loss
            self._set_torch(self._torch)
            if self._cuda_ready():
                self._cuda_seed_all(self._seed)  # CUDA starts from the seed when first used, as in a fresh child
            self._set_python(self._python)
            if self._numpy is not None:
                self._numpy[1](self._numpy[0])


class Server:
    def __init__(self, device: str, caps: codec.Caps, spec: lockdown.ChildSpec | None = None) -> None:
        self.device, self.caps, self.spec = device, caps, spec
        self.fresh = FreshState()
        # No student code before the submission's own limits are in force (the pool forks at a ceiling).
        self.armed = spec is None
        self.module: types.ModuleType | None = None
        self.helpers: dict[str, Any] = {"__builtins__": builtins, "__name__": "autograder_helpers"}
        self.reader = wire.FrameReader(caps.max_bytes)
        # The request being served, and its reverse calls so far: callbacks are numbered 1, 2, ... per request.
        self.request_id: str | None = None
        self.callbacks = 0
        self.refused: str | None = None  # the trusted side's "limit" answer: every later callback fails alike
        self.callback_lock = threading.Lock()
        # Handles passed in the request being served: a thread still calling one after its request ended is refused
        # here, so that it neither spends the next request's calls nor sends a frame between requests.
        self.live: set[str] = set()

    def serve(self) -> None:
        global _server
        _server = self
        while True:
            frame = wire.read_frame_blocking(lockdown.RPC_IN_FD, self.reader)
            if frame is None:
                return
            request_id = frame.msg.get("id")
            self.request_id = request_id if type(request_id) is str else None
            self.callbacks, self.refused = 0, None
            try:
                reply, buffers = self.handle(frame)
            finally:
                # Under the lock: a reverse call from a thread of the student's is either done before the reply (the
                # trusted side still answers it) or finds no request and raises in that thread; never a callback
                # frame after the reply, nor a thread reading the next request's frame.
                with self.callback_lock:
                    self.request_id = None
                    self.live.clear()
            reply["id"] = request_id
            _flush_std()
            wire.write_all(lockdown.RPC_OUT_FD, wire.encode_frame(reply, buffers))

    def handle(self, frame: wire.Frame) -> tuple[dict[str, Any], list[Any]]:
        op = frame.msg.get("op")
        if op == "limits":
            return self.limits(frame)
        handler = {
            "load": self.load,
            "define": self.define,
            "call": self.call,
        }.get(str(op))
        if handler is None:
            return {"error": "usage", "message": f"unknown op {op!r}"}, []
        if not self.armed:
            return {"error": "unarmed", "message": "the submission's limits were not set"}, []
        try:
            return handler(frame)
        except Usage as exc:
            return {"error": "usage", "message": str(exc)}, []
        except codec.ValueRefused as exc:
            return {"error": "bad_return", "message": str(exc)}, []
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from student code are outcomes too
            return _exception_reply(exc), []

    def limits(self, frame: wire.Frame) -> tuple[dict[str, Any], list[Any]]:
        """Lower the rlimits from the pool's ceiling to this submission's; once, before any other request.

        Only the limit fields are taken from the request: uid, working dir and the rest stay what lockdown used.
        """
        if self.armed or self.spec is None:
            return {"error": "unarmed", "message": "limits are set once, first"}, []
        try:
            fields: dict[str, Any] = {name: int(frame.msg["limits"][name]) for name in lockdown.LIMIT_FIELDS}
            lockdown.lower_rlimits(dataclasses.replace(self.spec, **fields))
        except Exception as exc:
            return {"error": "unarmed", "message": f"{type(exc).__name__}: {exc}"[:MESSAGE_CHARS]}, []
        self.armed = True
        return {"ok": True}, []

    def load(self, frame: wire.Frame) -> tuple[dict[str, Any], list[Any]]:
        source = bytes(frame.buffers[0]) if frame.buffers else b""
        try:
            code = compile(source, SUBMISSION_FILE, "exec", dont_inherit=True)
        except SyntaxError as exc:
            return {"error": "syntax", "line": exc.lineno, "message": str(exc.msg)[:MESSAGE_CHARS]}, []
        except ValueError as exc:  # null bytes, bad encoding declarations
            return {"error": "syntax", "line": None, "message": str(exc)[:MESSAGE_CHARS]}, []
        # Each load starts as in a fresh child: a new module, no helpers, the generators as they were at the start.
        module = types.ModuleType("submission")
        module.__file__ = SUBMISSION_FILE
        sys.modules["submission"] = module
        self.module = module
        self.helpers = {"__builtins__": builtins, "__name__": "autograder_helpers", "submission": module}
        self.fresh.restore()
        exec(code, module.__dict__)  # noqa: S102 - this is the jailed child; running student code is its job
        names = sorted(k for k, v in list(module.__dict__.items()) if callable(v) and not k.startswith("__"))
        return {"ok": True, "names": names[:200]}, []

    def define(self, frame: wire.Frame) -> tuple[dict[str, Any], list[Any]]:
        source = bytes(frame.buffers[0]) if frame.buffers else b""
        exec(compile(source, "<autograder helpers>", "exec", dont_inherit=True), self.helpers)  # noqa: S102
        return {"ok": True}, []

    def _function(self, name: Any) -> Callable[..., Any]:
        fn = getattr(self.module, str(name), None) if self.module is not None else None
        if fn is None or not callable(fn):
            raise Usage(f"the submission defines no function named {name!r}")
        return fn

    def _arguments(self, frame: wire.Frame) -> tuple[list[Any], dict[str, Any]]:
        args = self._decode(frame.msg.get("args"), frame.buffers)
        kwargs = self._decode(frame.msg.get("kwargs"), frame.buffers)
        if type(args) is not tuple or type(kwargs) is not dict:
            raise Usage("args must be a tuple and kwargs a dict")
        return list(args), kwargs

    def _decode(self, tree: Any, buffers: list[bytearray]) -> Any:
        return codec.decode_value(
            tree,
            buffers,
            self.caps,
            resolve_ref=self._resolve,
            device=self._device,
            resolve_fn=self._passed,
        )

    def _passed(self, handle: str) -> TrustedCallable:
        """A function handle of this request's arguments: callable until the request ends (``live``)."""
        self.live.add(handle)
        return TrustedCallable(handle)

    def _device(self, kind: str) -> torch.device:
        return torch.device(self.device)

    def reverse_call(self, handle: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """Call the trusted function behind ``handle``: one callback frame out, one answer back, nothing between.

        Calls from several threads at once go one after the other (``callback_lock``), as a student's test that
        uses a thread pool expects. Refused here, as an exception in the student's code: outside a request (a
        thread still calling after its test returned), arguments the wire cannot carry or over
        ``codec.CALLBACK_CAPS`` (a TrustedCallable among them), and every call after the trusted side said the
        call's limit was reached.
        """
        with self.callback_lock:
            if self.request_id is None:
                raise RuntimeError(OUTSIDE_A_REQUEST)
            if handle not in self.live:
                raise RuntimeError(STALE_HANDLE)
            if self.refused is not None:
                raise RuntimeError(self.refused)
            try:
                tree, buffers = codec.encode_value((tuple(args), dict(kwargs)), codec.CALLBACK_CAPS)
            except codec.ValueRefused as exc:
                raise TypeError(f"a function from the grader cannot take this argument: {exc}") from None
            self.callbacks += 1
            seq = self.callbacks
            msg = {"op": wire.CALLBACK, "id": self.request_id, "seq": seq, "h": handle}
            msg |= {"args": tree["v"][0], "kwargs": tree["v"][1]}
            wire.write_all(lockdown.RPC_OUT_FD, wire.encode_frame(msg, buffers))
            frame = wire.read_frame_blocking(lockdown.RPC_IN_FD, self.reader)
            return self._callback_result(frame, seq)

    def _callback_result(self, frame: wire.Frame | None, seq: int) -> Any:
        if frame is None or frame.msg.get("op") != wire.CALLBACK_REPLY or frame.msg.get("seq") != seq:
            raise RuntimeError("the grader's answer to a call of its function was lost")
        msg = frame.msg
        if msg.get("ok") is True:
            try:
                return codec.decode_value(msg.get("value"), frame.buffers, codec.CALLBACK_CAPS, device=self._device)
            except WireError:  # not this package's own exception type in student code
                raise RuntimeError("the grader's answer to a call of its function was malformed") from None
        message = str(msg.get("message", ""))[:MESSAGE_CHARS]
        if msg.get("error") == "limit":
            self.refused = message
        raise _REFUSAL_TYPES.get(str(msg.get("type")), RuntimeError)(message)

    def _resolve(self, name: str) -> Any:
        if name not in self.helpers:
            raise Usage(f"no helper named {name!r} was defined")
        return self.helpers[name]

    def call(self, frame: wire.Frame) -> tuple[dict[str, Any], list[Any]]:
        fn = self._function(frame.msg.get("name"))
        args, kwargs = self._arguments(frame)
        grad = frame.msg.get("grad")
        if grad is None:
            out = fn(*args, **kwargs)
            if self.device == "cuda":  # timed calls are wall clock on the trusted side: wait for the kernels here
                torch.cuda.synchronize()
            tree, buffers = codec.encode_value(out, self.caps)
            return {"ok": True, "value": tree}, buffers
        return self._call_with_grad(fn, args, kwargs, grad, frame.buffers)

    def _call_with_grad(
        self, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], grad: Any, buffers: list[bytearray]
    ) -> tuple[dict[str, Any], list[Any]]:
        wrt = grad.get("wrt") if type(grad) is dict else None
        if type(wrt) is not list or not all(type(i) is int and 0 <= i < len(args) for i in wrt):
            raise Usage("wrt must list positional argument indices")
        for i in wrt:
            if type(args[i]) is not torch.Tensor or not (args[i].is_floating_point() or args[i].is_complex()):
                raise Usage(f"argument {i} is not a floating-point tensor; no gradient can reach it")
            args[i] = args[i].detach().requires_grad_(True)
        grad_outputs = self._decode(grad.get("grad_outputs"), buffers)
        out = fn(*args, **kwargs)
        codec.encode_value(out, self.caps)  # refuse a bad return type before running backward on it
        outs = _tensors_in(out)
        if type(grad_outputs) is not list:
            raise Usage("grad_outputs must be a list")
        if len(grad_outputs) != len(outs):  # the student's return value, not the check, is at fault
            raise codec.ValueRefused(
                f"{len(outs)} tensor(s) (a {type(out).__name__}) where {len(grad_outputs)} were expected"
            )
        for i, (o, g) in enumerate(zip(outs, grad_outputs, strict=True)):
            if type(g) is torch.Tensor and o.shape != g.shape:
                raise codec.ValueRefused(
                    f"a tensor of shape {list(o.shape)} as output {i} where shape {list(g.shape)} was expected"
                )
        pairs = [(o, g) for o, g in zip(outs, grad_outputs, strict=True) if g is not None and o.requires_grad]
        inputs = [args[i] for i in wrt]
        grads: list[Any] = [None] * len(inputs)
        if pairs:
            found = torch.autograd.grad([o for o, _ in pairs], inputs, [g for _, g in pairs], allow_unused=True)
            grads = [None if g is None else g.detach() for g in found]
        tree, out_buffers = codec.encode_value((out, grads), self.caps)
        return {"ok": True, "value": tree}, out_buffers


def _flush_std() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):
            stream.flush()


class _NoSandboxImports:
    """A meta-path finder that refuses the sandbox's own package to student code."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name == "graders" or name.startswith("graders."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)


_sandbox_modules: tuple[str, ...] | None = None  # listed once in the zygote (``list_sandbox_modules``)


def _is_sandbox_module(name: str) -> bool:
    return name == "graders" or name.startswith("graders.")


def list_sandbox_modules() -> None:
    """In the zygote, after its last import: the names ``hide_sandbox_modules`` removes in every child.

    Walking ``sys.modules`` in a child touches (copies on write) the page of every key and module of the warmed
    heap: ~10 ms per child. The zygote imports nothing after this, and a child imports no module of this package
    before it hides them, so the list is complete.
    """
    global _sandbox_modules
    _sandbox_modules = tuple(n for n in sys.modules if _is_sandbox_module(n))


def hide_sandbox_modules() -> None:
    """Student code cannot import this package's types (its Usage, its codec errors) to raise them as ours.

    Defence in depth: the trusted side blames by where a failure happened, never by a type's name, so a forged
    exception could not blame the grader anyway. The server keeps working: its modules stay referenced here.
    """
    names = _sandbox_modules if _sandbox_modules is not None else [n for n in sys.modules if _is_sandbox_module(n)]
    for name in names:
        sys.modules.pop(name, None)
    sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p, "graders"))]
    sys.meta_path.insert(0, _NoSandboxImports())


def run_child(spec: lockdown.ChildSpec, fds: tuple[int, int, int], device: str, caps: codec.Caps) -> None:
    """Entry point in the freshly forked child; never returns.

    A child of the pool (``prefork.py``) is forked and locked down ahead, and waits for its first request after
    "ready": until then it holds nothing of any submission. Its rlimits are the pool's ceiling; the first request it
    serves must lower them to the submission's (``Server.limits``).
    """
    status = 0
    marks: list[tuple[str, float]] = [("start", time.monotonic())]
    try:
        lockdown.lock_down(spec, *fds, mark=lambda step: marks.append((step, time.monotonic())))
        hide_sandbox_modules()
        marks.append(("hidden", time.monotonic()))
    except BaseException as exc:
        _report_lockdown_failure(exc)
        os._exit(70)
    try:
        # The stamps are the stage profile (docs/sandbox.md); the trusted side only ever prints them.
        wire.write_all(lockdown.RPC_OUT_FD, wire.encode_frame({"op": "ready", "t": marks}))
        Server(device, caps, spec).serve()
    except BaseException:
        status = 71
    _flush_std()
    os._exit(status)


def _report_lockdown_failure(exc: BaseException) -> None:
    msg = {"op": "lockdown_failed", "error": f"{type(exc).__name__}: {exc}"[:MESSAGE_CHARS]}
    with contextlib.suppress(BaseException):  # the fd layout may not be in place yet: then the parent sees EOF
        wire.write_all(lockdown.RPC_OUT_FD, wire.encode_frame(msg))
