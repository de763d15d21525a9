"""The trusted side's handle on one jailed child running one submission: requests, deadlines, cleanup.

Every way the child can stop answering becomes a RunEnded with a student-facing cause (timeout, memory, output,
exited, protocol). Internal failures before the child is ready raise SandboxError instead.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graders.sandbox import procfs, wire
from graders.sandbox.cgroups import ChildCgroup
from graders.sandbox.channel import ChildChannel, ChildClosed, OutputExceeded
from graders.sandbox.config import RunLimits
from graders.sandbox.errors import RunEnded, SandboxError, WireError
from graders.sandbox.zygote_client import ZygoteClient

READY_TIMEOUT_S = 30.0
PAUSE_TIMEOUT_S = 5.0
_STOPPED = ("T", "t", "Z", "X")
PROTOCOL_MESSAGE = (
    "the channel between your code and the grader was corrupted (does your code write to file descriptors it did "
    "not open?)"
)
# Answers one reverse call of the child (a wire.CALLBACK frame): the reply's message and buffers.
CallbackHandler = Callable[[wire.Frame], tuple[dict[str, Any], list[Any]]]


@dataclass
class RunReport:
    output: bytes
    output_total: int
    exit_status: int | None


@dataclass
class ChildHandles:
    zygote: ZygoteClient
    inner_pid: int
    host_pid: int
    uid: int | None
    workdir: str
    cgroup: ChildCgroup | None
    limits: RunLimits


class StudentProcess:
    def __init__(self, handles: ChildHandles, channel: ChildChannel) -> None:
        self.h, self.channel = handles, channel
        self.ended: RunEnded | None = None
        self.exit_status: int | None = None
        self.cleanup_error: str | None = None
        self._finished = False
        self._ready = False
        self.ready_stamps: list[Any] = []  # the child's lockdown stamps (the stage profile only)
        self.spawn_stamps: list[Any] = []  # the zygote's stamps of this child's fork (likewise)
        self.helpers: set[str] = set()  # names the trusted side defined in this child (checks' Ref targets)

    def go(self) -> None:
        """Let the child finish its lockdown: the trusted side has put it in its cgroup (``lockdown.wait_for_go``)."""
        os.write(self.channel.to_child, b"G")  # the pipe is empty: one byte always fits

    def wait_ready(self) -> None:
        """The child's first frame says whether lockdown succeeded; anything else is an internal failure."""
        if self._ready:
            return
        frame = self._before_student_code(time.monotonic() + READY_TIMEOUT_S)
        if frame.msg.get("op") != "ready":
            raise SandboxError(f"the child failed its lockdown: {str(frame.msg.get('error'))[:500]}")
        stamps = frame.msg.get("t")
        self.ready_stamps = stamps if type(stamps) is list else []
        self._ready = True

    def _before_student_code(self, deadline: float) -> wire.Frame:
        """A frame of a child that has run no student code yet: a failure here is the sandbox's, not the student's."""
        try:
            return self.channel.receive(deadline)
        except (TimeoutError, ChildClosed, OutputExceeded, WireError) as exc:
            raise SandboxError(f"the child did not start: {type(exc).__name__}") from exc

    def arm(self, limits: dict[str, int]) -> None:
        """Lower a ready child's rlimits from the pool's ceiling to ``limits``: the first request it serves.

        Raises SandboxError on any failure: no student code has run in this child yet.
        """
        msg = {"op": "limits", "limits": limits, "id": secrets.token_hex(8)}
        deadline = time.monotonic() + READY_TIMEOUT_S
        try:
            self.channel.send(wire.encode_frame(msg), deadline)
        except (TimeoutError, ChildClosed) as exc:
            raise SandboxError(f"the child did not start: {type(exc).__name__}") from exc
        reply = self._before_student_code(deadline).msg
        if reply.get("id") != msg["id"] or reply.get("ok") is not True:
            raise SandboxError(f"the child could not lower its limits: {str(reply.get('message'))[:500]}")

    def alive(self) -> bool:
        """Whether the child's own process still runs (not gone, not a zombie); a check of /proc, no signal."""
        return self.h.host_pid > 0 and procfs.state(self.h.host_pid) not in (None, "Z", "X")

    def stop(self) -> None:
        """SIGKILL the run now, cheaply (no scan of /proc): its cgroup's members and its process group.

        Without a cgroup the child cannot fork (seccomp: threads only), so its process group is all of it. The
        complete sweep (every process of its uid) and the reap follow in ``finish``, off the critical path.
        """
        if self.h.cgroup is not None:
            self.h.cgroup.signal_all()
        if self.h.host_pid > 0:
            with contextlib.suppress(OSError):
                os.killpg(self.h.host_pid, signal.SIGKILL)

    def request(
        self,
        msg: dict[str, Any],
        buffers: list[Any],
        timeout_s: float,
        *,
        limit_s: float | None = None,
        on_callback: CallbackHandler | None = None,
    ) -> wire.Frame:
        """One round trip. Raises RunEnded when the child cannot answer (and is then already killed).

        Args:
            timeout_s: wall-clock budget of this round trip, reverse calls and their answers included.
            limit_s: the limit named to the student if it runs out (defaults to timeout_s).
            on_callback: answers the child's reverse calls while it serves this request; without it, a reverse call
                is a protocol error. Every frame must carry this request's id and reverse calls must be numbered
                1, 2, ... (``wire.CALLBACK``); anything else ends the run.
        """
        if self.ended is not None:
            raise self.ended
        msg = {**msg, "id": secrets.token_hex(8)}  # a reply forged in advance cannot carry this
        deadline = time.monotonic() + timeout_s
        outgoing, seq = wire.encode_frame(msg, buffers), 0
        while True:
            frame = self._exchange(outgoing, deadline, limit_s or timeout_s)
            if frame.msg.get("id") != msg["id"]:
                raise self._end("protocol", PROTOCOL_MESSAGE)
            if frame.msg.get("op") != wire.CALLBACK:
                return frame
            seq += 1
            if on_callback is None or frame.msg.get("seq") != seq:
                raise self._end("protocol", PROTOCOL_MESSAGE)
            reply, reply_buffers = on_callback(frame)  # may end the run itself (a malformed reverse call)
            reply |= {"op": wire.CALLBACK_REPLY, "id": msg["id"], "seq": seq}
            outgoing = wire.encode_frame(reply, reply_buffers)

    def _exchange(self, outgoing: bytes, deadline: float, limit_s: float) -> wire.Frame:
        """Send one frame, then wait for the child's next one; every way that fails ends the run."""
        try:
            self.channel.send(outgoing, deadline)
            return self.channel.receive(deadline)
        except TimeoutError:
            raise self._end("timeout", f"ran past the {limit_s:g} s limit") from None
        except OutputExceeded:
            raise self._end("output", f"printed more than {self.h.limits.output_kb} KiB of output") from None
        except WireError:
            raise self._end("protocol", PROTOCOL_MESSAGE) from None
        except ChildClosed:
            raise self._died() from None

    def end_run(self, cause: str, message: str) -> RunEnded:
        """Stop the run for a reason found by the caller (a reply it could not accept)."""
        return self._end(cause, message)

    def _end(self, cause: str, message: str) -> RunEnded:
        self.kill()
        self.ended = RunEnded(cause, message)
        return self.ended

    def _died(self) -> RunEnded:
        """The child went away on its own: find out why from the cgroup and its exit status."""
        self.kill()
        self._reap()
        status = self.exit_status
        if self.h.cgroup is not None and self.h.cgroup.oom_killed():
            return self._end("memory", f"memory limit of {self.h.limits.memory_mb} MiB exceeded")
        if status is not None and status >= 0 and os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            if sig in (signal.SIGXCPU, signal.SIGKILL):
                return self._end("timeout", f"used more than the {self.h.limits.cpu_s} s CPU time limit")
            return self._end("exited", f"the process was killed by signal {signal.Signals(sig).name}")
        code = os.WEXITSTATUS(status) if status is not None and status >= 0 and os.WIFEXITED(status) else "unknown"
        return self._end("exited", f"your code ended the process (exit status {code})")

    def kill(self) -> None:
        """SIGKILL the child's whole tree: its cgroup, its process group, and (sandboxed) every process of its uid.

        Does not wait for the processes to be gone (finish() does, before the cgroup is removed).
        """
        if self.h.cgroup is not None:
            self.h.cgroup.signal_all()
        with contextlib.suppress(OSError):
            os.killpg(self.h.host_pid, signal.SIGKILL)
        # Without a cgroup, the uid is the only complete list (a cgroup holds every descendant, so it suffices).
        if self.h.uid is not None and self.h.cgroup is None:
            for pid in procfs.pids_of_uid(self.h.uid):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)

    def members(self) -> list[int]:
        """Every host pid of this run: its cgroup (complete) or, without one, its uid's processes and the child."""
        found = set(self.h.cgroup.procs()) if self.h.cgroup is not None else set()
        if self.h.uid is not None and self.h.cgroup is None:
            found |= set(procfs.pids_of_uid(self.h.uid))
        if self.h.host_pid > 0:
            found.add(self.h.host_pid)
        return sorted(found)

    def cpu_seconds(self) -> float | None:
        """CPU time the run has used so far, read on the trusted side (the child's own report could be forged).

        Its cgroup's accounting where it has one (every process of the run, forks included); otherwise the child's
        process CPU clock (every thread of it, exited ones included: without a cgroup the child cannot fork). None
        where neither can be read (the process is gone). A timed call's work is the difference around it: what load
        beside the run, or a sleep in it, does not change.
        """
        if self.h.cgroup is not None:
            usec = self.h.cgroup.cpu_usage_usec()
            if usec is not None:
                return usec / 1e6
        return procfs.process_cpu_seconds(self.h.host_pid)

    def pause(self) -> None:
        """SIGSTOP every process of the run until all are stopped (a process still running could SIGCONT the others).

        On failure the run is killed (RunEnded): a half-stopped submission is never left behind.
        """
        if self.ended is not None:
            raise self.ended
        deadline = time.monotonic() + PAUSE_TIMEOUT_S
        try:
            while time.monotonic() < deadline:
                pids = self.members()
                for pid in pids:
                    with contextlib.suppress(OSError):
                        os.kill(pid, signal.SIGSTOP)
                with contextlib.suppress(OSError):
                    os.killpg(self.h.host_pid, signal.SIGSTOP)
                for _ in range(100):  # SIGSTOP is delivered asynchronously
                    if all(procfs.state(pid) in (None, *_STOPPED) for pid in pids):
                        break
                    time.sleep(0.0005)
                if self.members() == pids and all(procfs.state(pid) in (None, *_STOPPED) for pid in pids):
                    return
        except BaseException:
            raise self._end("exited", "your code's processes could not be paused for a timing measurement") from None
        raise self._end("exited", "your code's processes could not be paused for a timing measurement")

    def resume(self) -> None:
        """SIGCONT every process of the run; if that fails in any way, kill the run instead. Never raises."""
        try:
            for pid in self.members():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGCONT)
            with contextlib.suppress(OSError):
                os.killpg(self.h.host_pid, signal.SIGCONT)
        except BaseException:
            with contextlib.suppress(BaseException):
                self._end("exited", "your code's processes could not be resumed after a timing measurement")

    def _reap(self) -> None:
        if self.exit_status is None:
            reply = self.h.zygote.request(
                {"op": "reap", "pid": self.h.inner_pid, "uid": self.h.uid, "workdir": self.h.workdir}
            )
            status = reply.get("status")
            self.exit_status = status if type(status) is int else -1
            if reply.get("cleanup_error"):
                self.cleanup_error = str(reply["cleanup_error"])[:500]

    def abandon(self) -> None:
        """Release what the trusted side holds of a child whose zygote is gone (its processes died with it).

        No signal is sent: the dead child's host pid may belong to another process by now.
        """
        if not self._finished:
            self._finished = True
            try:
                self.channel.close()
            finally:
                if self.h.cgroup is not None:
                    self.h.cgroup.kill_all()
                    self.h.cgroup.remove()

    def finish(self) -> RunReport:
        """Kill, reap, wipe and release everything of this run.

        Raises SandboxError if the zygote failed or could not wipe the working dir (after releasing everything else):
        the caller keeps a result it already has, and restarts the zygote before the next run.
        """
        if not self._finished:
            self._finished = True
            try:
                self.kill()
                self._reap()
                self.channel.drain_output()
            finally:
                self.channel.close()
                if self.h.cgroup is not None:
                    self.h.cgroup.kill_all()
                    self.h.cgroup.remove()
            if self.cleanup_error is not None:
                raise SandboxError(f"the zygote could not wipe the run's working dir: {self.cleanup_error}")
        return RunReport(bytes(self.channel.output), self.channel.output_total, self.exit_status)
