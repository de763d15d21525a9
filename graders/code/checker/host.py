"""The service's side of one checker: start it in its jail, ask it for a file's checks, run a check in it.

While a check runs in the checker, the service answers each of its proxy calls on the real ``SandboxProxy`` (the
student's child, timing, reference children: all of it stays here, as before) and sends back the result or the
exception's kind. Everything read from the checker goes through the cap-checked frame reader and the codec, and
every wait has a deadline: a check that hangs, crashes or speaks out of turn costs its own check, never the service.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from graders.code.checker import protocol
from graders.code.checks import ArgumentRejected, CheckSpec, Ref, TrustedFunction
from graders.code.proxy import CheckUsageError, SandboxProxy
from graders.sandbox import codec, jail, launcher, procfs, uids, wire
from graders.sandbox.cgroup_common import SlotCgroups, TrustedCgroup
from graders.sandbox.channel import poll_ready, widen_pipe
from graders.sandbox.config import SandboxConfig
from graders.sandbox.errors import RunEnded, SandboxError, WireError
from graders.sandbox.student_process import PROTOCOL_MESSAGE
from graders.words import Words

log = logging.getLogger(__name__)
START_TIMEOUT_S = 120.0  # the first describe includes the interpreter's start and the torch import
DESCRIBE_TIMEOUT_S = 60.0
GRACE_S = 10.0  # past the check's own budget, for its code between calls and the round trips
CHECK_TIMED_OUT = "the check's own code ran past its time limit (an error in the check, not in your code)"
CHECK_ENDED = "the check's process ended (an error in the check, not in your code)"


class CheckerGone(Exception):
    """The checker closed its pipe, timed out or sent something malformed: it is killed and started anew."""


class ChecksUnavailable(Exception):
    """The checks file could not be imported or described (the set's own failure)."""


class _Pipes:
    """The service's end: poll-based, deadline-bound sends and receives of cap-checked frames."""

    def __init__(self, to_checker: int, from_checker: int, max_payload: int) -> None:
        self.wfd, self.rfd = to_checker, from_checker
        os.set_blocking(self.wfd, False)
        os.set_blocking(self.rfd, False)
        self.reader = wire.FrameReader(max_payload)

    def send(self, msg: dict[str, Any], buffers: list[Any] | None, deadline: float) -> None:
        view = memoryview(wire.encode_frame(msg, buffers or []))
        while view:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CheckerGone("timeout")
            if poll_ready([], [self.wfd], remaining)[1]:
                try:
                    view = view[os.write(self.wfd, view[: 1 << 20]) :]
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raise CheckerGone("closed") from exc

    def receive(self, deadline: float) -> wire.Frame:
        while True:
            try:
                frame = self.reader.pop()
            except WireError as exc:
                raise CheckerGone("malformed frame") from exc
            if frame is not None:
                return frame
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise CheckerGone("timeout")
            if poll_ready([self.rfd], [], remaining)[0]:
                try:
                    n = self.reader.read_from(self.rfd, 1 << 20)
                except BlockingIOError:
                    continue
                except (OSError, WireError) as exc:
                    raise CheckerGone("closed") from exc
                if n == 0:
                    raise CheckerGone("closed")

    def close(self) -> None:
        for fd in (self.wfd, self.rfd):
            with contextlib.suppress(OSError):
                os.close(fd)


class CheckerProcess:
    """One jailed checker for one set folder (a version: its content never changes underneath)."""

    def __init__(self, config: SandboxConfig, set_root: Path) -> None:
        self.config, self.set_root = config, set_root
        self.caps = codec.Caps(max_bytes=config.max_transfer_mb * 2**20)
        self.lock = threading.Lock()  # one check at a time
        self._lease = uids.lease_uid(config.uid_base, config.lock_dir) if config.sandboxed else None
        (req_r, req_w), (rep_r, rep_w) = os.pipe(), os.pipe()
        widen_pipe(req_r)
        widen_pipe(rep_r)
        uid = self._lease.uid if self._lease is not None else None
        self._copy: str | None = None
        try:
            seen = self._readable_copy(set_root, uid) if uid is not None else set_root
        except BaseException:
            for fd in (req_r, req_w, rep_r, rep_w):
                os.close(fd)
            self._release()
            raise
        argv = jail.checker_argv(config, req_r, rep_w, uid, seen)
        self._stderr: deque[bytes] = deque(maxlen=32)
        try:
            self.proc = launcher.popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(req_r, rep_w),
                env=dict(jail.CLEAN_ENV),
                cwd="/",
                start_new_session=True,
            )
        except BaseException:
            for fd in (req_r, req_w, rep_r, rep_w):
                os.close(fd)
            self._release()
            raise
        os.close(req_r)
        os.close(rep_w)
        self.pipes = _Pipes(req_w, rep_r, self.caps.max_bytes + wire.MAX_HEADER_BYTES)
        self.started = False
        self._slot: SlotCgroups | None = None  # the slot whose CPU share this checker is in (``join``)
        self._group: TrustedCgroup | None = None
        self._tree: list[int] = []
        threading.Thread(target=self._drain, daemon=True).start()

    def join(self, slot: SlotCgroups | None) -> None:
        """Put this checker's processes into ``slot``'s CPU share (once; a checker serves one slot).

        The checker runs what a check computes, the functions of reverse calls included, on arguments a submission
        chose: outside every group, one submission spent 26 s of the grader's CPU beside the one-core cap of its
        slot. Inside, the slot's share bounds it with the submission's own processes. Its processes are all there
        once it has answered (bubblewrap, its init, the checker; the checker cannot fork).
        """
        if slot is None or self._slot is slot or not self.started:
            return
        self._slot = slot
        self._tree = procfs.tree(self.proc.pid)
        group = slot.trusted()
        if group is None:
            return
        try:
            for pid in self._tree:
                group.add(pid)
        except OSError as exc:
            log.warning("could not move a checker into its slot's CPU group: %s", exc)
            return
        self._group = group

    def cpu_seconds(self) -> float | None:
        """CPU time of the checker's processes so far: its group's figure, else the threads' own clocks."""
        if self._group is not None:
            usec = self._group.cpu_usage_usec()
            if usec is not None:
                return usec / 1e6
        if not self._tree:
            self._tree = procfs.tree(self.proc.pid)
        return procfs.cpu_seconds(self._tree)

    def _readable_copy(self, set_root: Path, uid: int) -> Path:
        """A copy of the set that the checker's uid (and no other) may read: a set's folder in the data dir is the
        service's own (0700), and bubblewrap binds it as it is. Links are copied as links, never followed here: in
        the jail they point into the jail's own view.
        """
        self._copy = tempfile.mkdtemp(prefix="autograder-checker-")
        target = Path(self._copy) / "set"
        try:
            shutil.copytree(set_root, target, symlinks=True)
            for path in [Path(self._copy), target, *target.rglob("*")]:
                os.chown(path, 0, uid, follow_symlinks=False)
                if not path.is_symlink():
                    path.chmod(0o750 if path.is_dir() else 0o640)
        except OSError as exc:
            raise SandboxError(f"cannot prepare the set's files for its checker: {exc}") from exc
        return target

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr.append(line[:300])

    def stderr_tail(self) -> str:
        return b"".join(self._stderr).decode(errors="replace").strip()[-1500:]

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _timeout(self, seconds: float) -> float:
        return time.monotonic() + (seconds if self.started else max(seconds, START_TIMEOUT_S))

    def describe(self, relative: str) -> list[dict[str, Any]]:
        """The checks ``relative`` defines, validated. Raises ChecksUnavailable (the set's) or CheckerGone."""
        deadline = self._timeout(DESCRIBE_TIMEOUT_S)
        self.pipes.send({"op": "describe", "file": relative}, [], deadline)
        reply = self.pipes.receive(deadline).msg
        self.started = True
        if reply.get("error") == "import":
            raise ChecksUnavailable(protocol.clip(reply.get("message", ""), 1000))
        checks = reply.get("checks")
        if reply.get("ok") is not True or type(checks) is not list or len(checks) > protocol.MAX_CHECKS:
            raise CheckerGone("malformed description")
        try:
            specs = [protocol.parse_spec(raw) for raw in checks]
        except protocol.BadDescription as exc:
            raise ChecksUnavailable(str(exc)) from None
        names = [s["name"] for s in specs]
        if len(set(names)) != len(names):
            raise ChecksUnavailable("duplicate check names")
        return specs

    def ping(self) -> None:
        """Wait for a new checker to be up (any reply will do), so its start is not the next request's time."""
        deadline = self._timeout(DESCRIBE_TIMEOUT_S)
        self.pipes.send({"op": "ping"}, [], deadline)
        self.pipes.receive(deadline)
        self.started = True

    def variant(self, relative: str, seed: int, timeout_s: float) -> Any:
        """What ``generate(seed)`` in ``relative`` returned (JSON data, not yet validated). Raises
        ChecksUnavailable (the generator's own failure) or CheckerGone (it hung, crashed or spoke out of turn)."""
        deadline = self._timeout(timeout_s)
        self.pipes.send({"op": "variant", "file": relative, "seed": seed}, [], deadline)
        reply = self.pipes.receive(deadline).msg
        self.started = True
        if reply.get("error") == "generator":
            raise ChecksUnavailable(protocol.clip(reply.get("message", ""), 1000))
        if reply.get("ok") is not True or "variant" not in reply:
            raise CheckerGone("malformed variant")
        return reply["variant"]

    def run(self, relative: str, spec: CheckSpec, proxy: SandboxProxy, call_limit_s: float) -> str | Words | None:
        """Run one check against ``proxy``; returns its feedback or raises what the check raised (rebuilt here).

        A RunEnded of the student's child is raised from what this side saw, never from what the checker claims.
        """
        deadline = self._timeout(spec.timeout_s + call_limit_s + GRACE_S)
        source = proxy.source
        run = _Run(self, proxy, deadline)
        buffers = [source.encode()] if source is not None else []
        with contextlib.ExitStack() as stack:
            run.stack = stack
            self.pipes.send({"op": "run", "file": relative, "check": spec.name}, buffers, deadline)
            while True:
                frame = self.pipes.receive(deadline)
                if "done" in frame.msg:
                    break
                if frame.msg.get("op") != "proxy":
                    raise CheckerGone("unexpected frame")
                reply, out = run.execute(frame)
                self.pipes.send(reply, out, deadline)
        self.started = True
        if run.ended is not None:
            raise run.ended  # the student's child is gone, whatever the check did about it
        return _outcome(frame.msg["done"])

    def close(self) -> None:
        self.pipes.close()
        if self.proc.poll() is None:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, 9)  # bwrap's --die-with-parent and its pid namespace take the rest
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        if self._group is not None:
            with contextlib.suppress(OSError, SandboxError):
                self._group.remove()
            self._group = None
        self._release()

    def _release(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None
        if self._copy is not None:
            shutil.rmtree(self._copy, ignore_errors=True)
            self._copy = None


def _outcome(done: Any) -> str | Words | None:
    if type(done) is not dict:
        raise CheckerGone("malformed outcome")
    kind = done.get("kind")
    if kind == "passed":
        return protocol.parse_feedback(done) or None
    if kind == "failed":
        from graders.code.checks import CheckFailed

        fraction = protocol.number(done.get("fraction")) or 0.0
        raise CheckFailed(protocol.parse_feedback(done), score_fraction=fraction)
    if kind == "assertion":
        raise AssertionError(protocol.clip(done.get("message", ""), protocol.FEEDBACK_CHARS))
    if kind == "run_ended":  # the checker says the student's run ended, but this side saw no such thing
        raise CheckUsageError("the check reported an ended run that did not happen")
    if kind == "raised":
        exc = protocol.rebuild(done)
        if isinstance(exc, RunEnded):
            raise CheckUsageError("the check reported an ended run that did not happen")
        raise exc
    raise CheckerGone("malformed outcome")


class _Run:
    """One check's proxy calls, made on the service's SandboxProxy."""

    def __init__(self, checker: CheckerProcess, proxy: SandboxProxy, deadline: float) -> None:
        self.checker, self.proxy, self.deadline = checker, proxy, deadline
        self.ended: RunEnded | None = None
        self.stack: contextlib.ExitStack | None = None
        self.sessions: dict[int, Any] = {}
        self.timed: dict[int, Callable[[], Any]] = {}  # what asking for a timed call's result does (no reply kept)

    def _unreadable(self) -> Any:
        """A timed reply that could not be read ends the run when the check asks for it, as decoding it would."""
        raise self.proxy._process.end_run("protocol", PROTOCOL_MESSAGE)

    def execute(self, frame: wire.Frame) -> tuple[dict[str, Any], list[Any]]:
        try:
            return self._execute(frame.msg, frame.buffers)
        except RunEnded as exc:
            self.ended = self.ended or exc
            return protocol.raise_fields(exc), []
        except CheckerGone:
            raise
        except Exception as exc:
            return protocol.raise_fields(exc), []

    def _args(self, msg: dict[str, Any], buffers: list[bytearray]) -> Any:
        try:
            return codec.decode_value(
                msg.get("value"), buffers, self.checker.caps, resolve_ref=Ref, resolve_fn=self._stub
            )
        except WireError as exc:
            raise TypeError(f"the check passed a value that could not be read: {exc}") from None

    def _ok(self, value: Any) -> tuple[dict[str, Any], list[Any]]:
        tree, buffers = codec.encode_value(value, self.checker.caps)
        return {"ok": True, "value": tree}, buffers

    def _execute(self, msg: dict[str, Any], buffers: list[bytearray]) -> tuple[dict[str, Any], list[Any]]:
        proxy, method = self.proxy, msg.get("m")
        name = protocol.clip(msg.get("name", ""), protocol.NAME_CHARS)
        if method == "call":
            args, kwargs = _pair(self._args(msg, buffers))
            return self._ok(proxy.call(name, *args, **kwargs))
        if method == "call_with_grad":
            value = self._args(msg, buffers)
            if type(value) is not tuple or len(value) != 3:
                raise TypeError("call_with_grad takes args, kwargs and grad_outputs")
            return self._ok(
                proxy.call_with_grad(name, list(value[0]), dict(value[1]), list(value[2]), _ints(msg.get("wrt")))
            )
        if method == "define":
            proxy.define(_text(msg.get("source")))
            return {"ok": True}, []
        if method == "time":
            args, kwargs = _pair(self._args(msg, buffers))
            timing = proxy.time(
                name, list(args), kwargs, warmup=_count(msg.get("warmup")), repeat=_count(msg.get("repeat"))
            )
            return {"ok": True, "times": timing.times_s}, []
        if method == "time_reference":
            args, kwargs = _pair(self._args(msg, buffers))
            timing = proxy.time_reference(
                _text(msg.get("source")),
                name,
                list(args),
                kwargs,
                warmup=_count(msg.get("warmup")),
                repeat=_count(msg.get("repeat")),
            )
            return {"ok": True, "times": timing.times_s}, []
        if method == "session_open":
            assert self.stack is not None
            session = self.stack.enter_context(proxy.timing_session(_text(msg.get("source")), name))
            sid = len(self.sessions)
            self.sessions[sid] = session
            return {"ok": True, "sid": sid}, []
        if method == "session_close":
            return {"ok": True}, []  # the sessions close with the run (ExitStack), in reverse order
        if method == "session_student":
            args, kwargs = _pair(self._args(msg, buffers))
            timed, frame = self._session(msg).student_call(name, list(args), kwargs)
            rid = len(self.timed)
            reply: dict[str, Any] = {"ok": True, "seconds": timed.seconds, "rid": rid}
            # The result travels with the timing, so the check needs no second round trip to read it. Only a
            # result that reads cleanly does: one that does not ends the run only when the check asks for it
            # (``timed_result``), as it did before. Either way the reply is decoded here as it arrives and not
            # kept: a check's series of calls each returning the transfer cap (60 MiB) held them all until the
            # check ended (the service's peak went from 400 to 745 MB); what is kept is what asking would do.
            readable, value = proxy.peek(frame)
            del frame
            if not readable:
                self.timed[rid] = self._unreadable
                return reply, []
            try:
                tree, out = codec.encode_value(value, self.checker.caps)
            except codec.ValueRefused as exc:
                self.timed[rid] = _raiser(exc)
                return reply, []
            self.timed[rid] = _raiser(CheckUsageError("the timed call's result was sent with its timing"))
            return {**reply, "value": tree}, out
        if method == "session_reference":
            args, kwargs = _pair(self._args(msg, buffers))
            return {"ok": True, "seconds": self._session(msg).reference(list(args), kwargs)}, []
        if method == "timed_result":
            result = self.timed.get(msg.get("rid"))  # type: ignore[arg-type]
            if result is None:
                raise CheckUsageError("no such timed call")
            return self._ok(result())
        raise CheckUsageError("unknown proxy call")

    def _session(self, msg: dict[str, Any]) -> Any:
        session = self.sessions.get(msg.get("sid"))  # type: ignore[arg-type]
        if session is None:
            raise CheckUsageError("no such timing session")
        return session

    def _stub(self, handle: str) -> TrustedFunction:
        """A TrustedFunction here that stands for the checker's: each call asks the checker to run it."""

        def call(*args: Any, **kwargs: Any) -> Any:
            tree, buffers = codec.encode_value((args, kwargs), codec.CALLBACK_CAPS)
            pipes = self.checker.pipes
            before = self.checker.cpu_seconds()
            pipes.send(
                {"op": "callback", "h": handle, "args": tree["v"][0], "kwargs": tree["v"][1]}, buffers, self.deadline
            )
            frame = pipes.receive(self.deadline)
            after = self.checker.cpu_seconds()
            if before is not None and after is not None:  # the checker's time is the submission's too
                self.proxy.budget.charge_cpu(after - before)
            answer = frame.msg.get("cb")
            if answer == "ok":
                return codec.decode_value(frame.msg.get("value"), frame.buffers, codec.CALLBACK_CAPS)
            if answer == "reject":
                type_name = frame.msg.get("type")
                raise ArgumentRejected(
                    protocol.clip(frame.msg.get("message", ""), 500),
                    type_name=type_name if type(type_name) is str else "ValueError",
                )
            if answer == "usage":
                raise CheckUsageError(protocol.clip(frame.msg.get("message", ""), 500))
            raise RuntimeError("the check's function failed")

        return TrustedFunction(call)


def _raiser(exc: BaseException) -> Callable[[], Any]:
    def raise_it() -> Any:
        raise exc

    return raise_it


def _pair(value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if type(value) is not tuple or len(value) != 2 or type(value[0]) is not tuple or type(value[1]) is not dict:
        raise TypeError("expected arguments and keyword arguments")
    return value[0], value[1]


def _text(value: Any) -> str:
    if type(value) is not str or len(value) > 1_000_000:
        raise TypeError("expected source text")
    return value


def _count(value: Any) -> int:
    if type(value) is not int or not 0 <= value <= 10_000:
        raise TypeError("warmup and repeat must be small non-negative integers")
    return value


def _ints(value: Any) -> list[int]:
    if type(value) is not list or not all(type(i) is int for i in value):
        raise TypeError("wrt must list positional argument indices")
    return value


Factory = Callable[[Path], CheckerProcess]
__all__ = ["CheckerGone", "CheckerProcess", "ChecksUnavailable", "SandboxError"]
