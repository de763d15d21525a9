"""StudentProxy over the sandbox: each method is one round trip to the jailed child (graders.code.checks)."""

from __future__ import annotations

import time
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


class CheckUsageError(Exception):
    """The check asked the child for something impossible (an instructor's mistake, not the student's)."""


class CheckBudgetExceeded(Exception):
    """The check's own time budget ran out before it made its next call."""


def _ref_name(value: Any) -> str | None:
    return value.name if type(value) is Ref else None


class SandboxProxy:
    """The StudentProxy handed to checks; one instance per check, bound to that check's time budget.

    Args:
        process: the submission's jailed child.
        call_limit_s: the problem's per-call wall-clock limit (limits.time_s).
        check_limit_s: the check's whole budget (check.timeout_s), counted from construction.
        device: where the child keeps tensors ("cpu" or "cuda").
    """

    def __init__(
        self, process: StudentProcess, *, call_limit_s: float, check_limit_s: float, device: str, caps: codec.Caps
    ) -> None:
        self.device = device
        self._process, self._caps = process, caps
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
        outputs, grads = self._decode(self._request(msg, buffers))
        return outputs, list(grads)

    def time(
        self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, *, warmup: int = 2, repeat: int = 5
    ) -> Timing:
        tree, buffers = self._encode((tuple(args), dict(kwargs or {})))
        self._request({"op": "time_prepare", "name": name, "args": tree["v"][0], "kwargs": tree["v"][1]}, buffers)
        times: list[float] = []
        for i in range(warmup + repeat):
            start = time.perf_counter()  # wall clock on the trusted side, around the whole round trip
            self._request({"op": "time_run"}, [])
            if i >= warmup:
                times.append(time.perf_counter() - start)
        return Timing(times)

    def _encode(self, value: Any) -> tuple[Any, list[Any]]:
        try:
            return codec.encode_value(value, self._caps, ref_of=_ref_name)
        except codec.ValueRefused as exc:
            raise TypeError(f"the check passed a value the sandbox cannot carry: {exc}") from None

    def _request(self, msg: dict[str, Any], buffers: list[Any]) -> Frame:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise CheckBudgetExceeded(f"ran past the check's {self._check_limit_s:g} s limit")
        if remaining < self._call_limit_s:
            timeout, limit = remaining, self._check_limit_s
        else:
            timeout, limit = self._call_limit_s, self._call_limit_s
        frame = self._process.request(msg, buffers, timeout, limit_s=limit)
        reply = frame.msg
        if reply.get("ok") is True:
            return frame
        error = reply.get("error")
        message = str(reply.get("message", ""))[:2000]
        if error == "raised":
            where = str(reply.get("where", ""))[:200]
            raise StudentError(str(reply.get("type", "Exception"))[:200], f"{message} ({where})" if where else message)
        if error == "bad_return":
            raise BadReturnValue(f"{msg.get('name', 'your function')} returned {message}")
        if error == "usage":
            raise CheckUsageError(message)
        raise self._process.end_run("protocol", PROTOCOL_MESSAGE)

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
