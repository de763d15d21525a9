"""The trusted side of one child's pipes: send a request, wait for its reply under a deadline, capture output.

Everything read here comes from a process running student code: replies are parsed by the cap-checked FrameReader,
and stdout/stderr are only stored (the first ``output_cap`` bytes) and counted, never interpreted.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import select
import time

from graders.sandbox import wire

F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20
CHUNK = 1 << 20


class ChildClosed(Exception):
    """The child closed its reply pipe (it exited or was killed)."""


class OutputExceeded(Exception):
    """The child printed more than its output limit."""


def widen_pipe(fd: int) -> None:
    """1 MiB pipes make a 2 MiB tensor round trip faster (docs/sandbox.md, "Measured numbers")."""
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_BYTES)


def poll_ready(readers: list[int], writers: list[int], timeout_s: float) -> tuple[list[int], list[int]]:
    """The ready fds, as select() lists them: a closed or failed pipe counts as ready (its read or write says so)."""
    poller = select.poll()
    for fd in readers:
        poller.register(fd, select.POLLIN)
    for fd in writers:
        poller.register(fd, select.POLLOUT)
    events = dict(poller.poll(timeout_s * 1000))
    done = select.POLLHUP | select.POLLERR | select.POLLNVAL
    readable = [fd for fd in readers if events.get(fd, 0) & (select.POLLIN | done)]
    writable = [fd for fd in writers if events.get(fd, 0) & (select.POLLOUT | done)]
    return readable, writable


class ChildChannel:
    def __init__(self, to_child: int, from_child: int, output: int, *, output_cap: int, max_payload: int) -> None:
        self.to_child, self.from_child, self.output_fd = to_child, from_child, output
        for fd in (to_child, from_child, output):
            os.set_blocking(fd, False)
        self.output_cap = output_cap
        self.output_open = True
        self.output = bytearray()
        self.output_total = 0
        self.reader = wire.FrameReader(max_payload)

    def send(self, data: bytes, deadline: float) -> None:
        view = memoryview(data)
        while view:
            _, writable = self._wait([self.to_child], deadline, replies=False)
            if self.to_child in writable:
                try:
                    view = view[os.write(self.to_child, view[:CHUNK]) :]
                except BlockingIOError:
                    continue
                except BrokenPipeError as exc:
                    raise ChildClosed("the child's request pipe is closed") from exc

    def receive(self, deadline: float) -> wire.Frame:
        """The next frame from the child. Raises TimeoutError, ChildClosed, OutputExceeded or WireError."""
        while True:
            frame = self.reader.pop()
            if frame is not None:
                return frame
            readable, _ = self._wait([], deadline)
            if self.from_child in readable:
                try:
                    n = self.reader.read_from(self.from_child, CHUNK)  # straight into the frame's buffer
                except BlockingIOError:
                    continue
                if n == 0:
                    raise ChildClosed("the child closed its reply pipe")

    def _wait(self, writers: list[int], deadline: float, *, replies: bool = True) -> tuple[list[int], list[int]]:
        """Block until the reply fd (or a writer) is ready, draining output meanwhile: output never stalls the child.

        While sending, the reply fd is not watched (``replies=False``): a child that writes frames while a request
        or a reverse call's answer is still going out would otherwise make this loop spin until the deadline.

        poll, not select: select() cannot watch fd numbers above 1023, and a server holding many connections (or a
        client flooding it) hands the grader such numbers; every grading would then fail.
        """
        while True:
            readers = ([self.from_child] if replies else []) + ([self.output_fd] if self.output_open else [])
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError
            readable, writable = poll_ready(readers, writers, remaining)
            if self.output_fd in readable:
                self._capture()
                readable = [fd for fd in readable if fd != self.output_fd]
            if readable or writable:
                return readable, writable

    def _read(self, fd: int, n: int) -> bytes | None:
        try:
            return os.read(fd, min(n, CHUNK))
        except BlockingIOError:
            return None

    def _capture(self) -> None:
        chunk = self._read(self.output_fd, 65536)
        if chunk == b"":  # every writer closed stdout/stderr: stop watching it
            self.output_open = False
            return
        if chunk:
            self.output_total += len(chunk)
            room = self.output_cap - len(self.output)
            if room > 0:
                self.output += chunk[:room]
            if self.output_total > self.output_cap:
                raise OutputExceeded

    def drain_output(self) -> None:
        """Collect what is left in the output pipe (after the child's processes are dead)."""
        with contextlib.suppress(OutputExceeded, OSError):
            for _ in range(1024):
                chunk = self._read(self.output_fd, 65536)
                if not chunk:
                    return
                self.output_total += len(chunk)
                room = self.output_cap - len(self.output)
                if room > 0:
                    self.output += chunk[:room]

    def close(self) -> None:
        for fd in (self.to_child, self.from_child, self.output_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
