"""StudentProxy over the sandbox: each method is one round trip to the jailed child (graders.code.checks)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import Any

import torch

from graders.code.checks import Ref, StudentError, Timing
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


class CheckUsageError(Exception):
    """The check asked the child for something impossible (an instructor's mistake, not the student's)."""


class CheckBudgetExceeded(Exception):
    """The check's own time budget ran out before it made its next call."""


def _ref_name(value: Any) -> str | None:
    return value.name if type(value) is Ref else None


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
    ) -> None:
        self.device = device
        self._process, self._caps, self._reference = process, caps, reference
        self._call_limit_s, self._check_limit_s = call_limit_s, check_limit_s
        self._deadline = time.monotonic() + check_limit_s

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        tree, buffers = self._encode((args, kwargs))
        reply = self._request({"op": "call", "name": name, "args": tree["v"][0], "kwargs": tree["v"][1]}, buffers)
        return self._decode(reply)

    def define(self, source: str) -> None:
        self._request({"op": "define"}, [source.encode()])

    def call_with_grad(
        self, name: str, args: list[Any], kwargs: dict[str, Any], grad_outputs: list[Any], wrt: list[int]
    ) -> tuple[Any, list[Any]]:
        tree, buffers = self._encode((tuple(args), dict(kwargs), list(grad_outputs)))
        a, k, g = tree["v"]
        msg = {"op": "call", "name": name, "args": a, "kwargs": k, "grad": {"wrt": list(wrt), "grad_outputs": g}}
        value = self._decode(self._request(msg, buffers))
        if type(value) is not tuple or len(value) != 2 or type(value[1]) not in (list, tuple):
            raise self._process.end_run("protocol", MALFORMED_REPLY)
        outputs, grads = value
        if len(grads) != len(wrt) or not all(g is None or type(g) is torch.Tensor for g in grads):
            raise self._process.end_run("protocol", MALFORMED_REPLY)
        return outputs, list(grads)

    def time(
        self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, *, warmup: int = 2, repeat: int = 5
    ) -> Timing:
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

    def _encode(self, value: Any) -> tuple[Any, list[Any]]:
        try:
            return codec.encode_value(value, self._caps, ref_of=_ref_name)
        except codec.ValueRefused as exc:
            raise TypeError(f"the check passed a value the sandbox cannot carry: {exc}") from None

    def _request(self, msg: dict[str, Any], buffers: list[Any], process: StudentProcess | None = None) -> Frame:
        process = process or self._process
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise CheckBudgetExceeded(f"ran past the check's {self._check_limit_s:g} s limit")
        if remaining < self._call_limit_s:
            timeout, limit = remaining, self._check_limit_s
        else:
            timeout, limit = self._call_limit_s, self._call_limit_s
        frame = process.request(msg, buffers, timeout, limit_s=limit)
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
        if error == "usage":
            raise CheckUsageError(message)
        raise process.end_run("protocol", PROTOCOL_MESSAGE)

    def _decode(self, frame: Frame) -> Any:
        if "value" not in frame.msg:
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE)
        try:
            return codec.decode_value(frame.msg["value"], frame.buffers, self._caps, device=self._device_for)
        except WireError:
            raise self._process.end_run("protocol", PROTOCOL_MESSAGE) from None

    def _device_for(self, kind: str) -> torch.device:
        return torch.device("cuda" if kind == "cuda" and torch.cuda.is_available() else "cpu")


__all__ = ["BadReturnValue", "CheckBudgetExceeded", "CheckUsageError", "RunEnded", "SandboxProxy"]
