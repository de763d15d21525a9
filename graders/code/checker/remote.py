"""The StudentProxy a check gets inside the checker: each call is a request to the service, which makes it on the
student's child (``SandboxProxy``) and answers with the result or the exception, rebuilt here from its kind.

A ``TrustedFunction`` the check passes stays here, under a random handle: while the service waits on the student, it
asks this process to run it (``{"op": "callback"}``) and sends the answer on to the student.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Callable, Iterator
from typing import Any

import torch

from graders.code.checker import protocol
from graders.code.checks import ArgumentRejected, Ref, TimedCall, Timing, TimingSession, TrustedFunction
from graders.code.proxy import CheckUsageError
from graders.sandbox import codec, wire
from graders.sandbox.errors import WireError

log = logging.getLogger(__name__)


class Link:
    """This process's end of the pipes to the service: blocking, one frame at a time."""

    def __init__(self, rfd: int, wfd: int, max_payload: int) -> None:
        self.rfd, self.wfd = rfd, wfd
        self.reader = wire.FrameReader(max_payload)

    def send(self, msg: dict[str, Any], buffers: list[Any] | None = None) -> None:
        wire.write_all(self.wfd, wire.encode_frame(msg, buffers or []))

    def receive(self) -> wire.Frame:
        frame = wire.read_frame_blocking(self.rfd, self.reader)
        if frame is None:
            raise EOFError("the service closed the checker's pipe")
        return frame


def _device_for(kind: str) -> torch.device:
    return torch.device("cuda" if kind == "cuda" and torch.cuda.is_available() else "cpu")


class RemoteProxy:
    """A StudentProxy whose every method is one round trip to the service (graders.code.checks.StudentProxy)."""

    def __init__(self, link: Link, *, device: str, source: str | None, caps: codec.Caps) -> None:
        self.device = device
        self._source, self._link, self._caps = source, link, caps
        self._functions: dict[str, Callable[..., Any]] = {}

    @property
    def source(self) -> str | None:
        return self._source

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        return self._value(self._rpc("call", {"name": name}, (args, kwargs)))

    def define(self, source: str) -> None:
        self._rpc("define", {"source": source})

    def call_with_grad(
        self, name: str, args: list[Any], kwargs: dict[str, Any], grad_outputs: list[Any], wrt: list[int]
    ) -> tuple[Any, list[Any]]:
        value = self._value(
            self._rpc(
                "call_with_grad", {"name": name, "wrt": list(wrt)}, (tuple(args), dict(kwargs), list(grad_outputs))
            )
        )
        outputs, grads = value
        return outputs, list(grads)

    def time(
        self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, *, warmup: int = 2, repeat: int = 5
    ) -> Timing:
        frame = self._rpc("time", {"name": name, "warmup": warmup, "repeat": repeat}, (tuple(args), dict(kwargs or {})))
        return Timing(_times(frame.msg))

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
        extra = {"source": source, "name": name, "warmup": warmup, "repeat": repeat}
        frame = self._rpc("time_reference", extra, (tuple(args), dict(kwargs or {})))
        return Timing(_times(frame.msg))

    @contextlib.contextmanager
    def timing_session(self, source: str, name: str) -> Iterator[TimingSession]:
        sid = self._rpc("session_open", {"source": source, "name": name}).msg.get("sid")
        try:
            yield _RemoteTimingSession(self, sid)
        finally:
            self._rpc("session_close", {"sid": sid})

    # -- the round trip ---------------------------------------------------------------------------------------

    def _rpc(self, method: str, extra: dict[str, Any], value: Any = None) -> wire.Frame:
        msg: dict[str, Any] = {"op": "proxy", "m": method, **extra}
        buffers: list[Any] = []
        self._functions = {}
        if value is not None:
            try:
                tree, buffers = codec.encode_value(value, self._caps, ref_of=_ref_name, fn_of=self._handle_of)
            except codec.ValueRefused as exc:
                raise TypeError(f"the check passed a value the sandbox cannot carry: {exc}") from None
            msg["value"] = tree
        self._link.send(msg, buffers)
        while True:
            frame = self._link.receive()
            if frame.msg.get("op") == "callback":
                self._answer(frame)
                continue
            if "raise" in frame.msg:
                raise protocol.rebuild(frame.msg)
            return frame

    def _handle_of(self, value: Any) -> str | None:
        if type(value) is not TrustedFunction:
            return None
        handle = secrets.token_hex(8)
        self._functions[handle] = value.fn
        return handle

    def _value(self, frame: wire.Frame) -> Any:
        return codec.decode_value(frame.msg.get("value"), frame.buffers, self._caps, device=_device_for)

    def _answer(self, frame: wire.Frame) -> None:
        """Run one of this call's TrustedFunctions on the arguments the student's code passed (via the service)."""
        fn = self._functions.get(frame.msg.get("h"))  # type: ignore[arg-type]
        try:
            tree = {"t": "tuple", "v": [frame.msg.get("args"), frame.msg.get("kwargs")]}
            args, kwargs = codec.decode_value(tree, frame.buffers, codec.CALLBACK_CAPS, device=_device_for)
            if fn is None:
                raise LookupError("no such function")
            out = fn(*args, **kwargs)
            tree, buffers = codec.encode_value(out, codec.CALLBACK_CAPS)
        except ArgumentRejected as exc:
            self._link.send({"cb": "reject", "type": exc.type_name, "message": protocol.clip(exc.message, 500)})
            return
        except CheckUsageError as exc:
            self._link.send({"cb": "usage", "message": protocol.clip(exc, 500)})
            return
        except (Exception, WireError) as exc:
            log.debug("a TrustedFunction failed: %s", type(exc).__name__)
            self._link.send({"cb": "failed"})
            return
        self._link.send({"cb": "ok", "value": tree}, buffers)


class _RemoteTimingSession:
    def __init__(self, proxy: RemoteProxy, sid: Any) -> None:
        self._proxy, self._sid = proxy, sid

    def student(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> TimedCall:
        proxy = self._proxy
        frame = proxy._rpc("session_student", {"sid": self._sid, "name": name}, (tuple(args), dict(kwargs or {})))
        seconds, rid = _seconds(frame.msg), frame.msg.get("rid")
        if "value" in frame.msg:  # the result came with the timing: read here when the check asks for it
            return TimedCall(seconds, lambda: proxy._value(frame))
        return TimedCall(seconds, lambda: proxy._value(proxy._rpc("timed_result", {"rid": rid})))

    def reference(self, args: list[Any], kwargs: dict[str, Any] | None = None) -> float:
        frame = self._proxy._rpc("session_reference", {"sid": self._sid}, (tuple(args), dict(kwargs or {})))
        return _seconds(frame.msg)


def _ref_name(value: Any) -> str | None:
    return value.name if type(value) is Ref else None


def _seconds(msg: dict[str, Any]) -> float:
    value = protocol.number(msg.get("seconds"))
    return float("nan") if value is None else value


def _times(msg: dict[str, Any]) -> list[float]:
    times = msg.get("times")
    found = [protocol.number(t) for t in times] if type(times) is list else []
    return [t for t in found if t is not None]
