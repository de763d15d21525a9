"""The trusted side's handle on one zygote process: start it, ask it to fork or reap a child, stop it."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import tempfile
import threading
from collections import deque
from typing import Any

from graders.sandbox import jail, launcher, procfs
from graders.sandbox.channel import poll_ready
from graders.sandbox.config import SandboxConfig
from graders.sandbox.errors import SandboxError

log = logging.getLogger(__name__)
CONTROL_TIMEOUT_S = 30.0


class ZygoteClient:
    def __init__(self, config: SandboxConfig) -> None:
        self.config = config
        self._lock = threading.Lock()  # one request at a time on the control socket: replies come in order
        self._ctl, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._host_work: str | None = None
        if config.sandboxed:
            if shutil.which(config.bwrap_path) is None:
                raise SandboxError(
                    "bubblewrap (bwrap) is not installed: install it (Debian/Ubuntu: apt-get install bubblewrap) "
                    "or, on a laptop only, use SandboxConfig(mode='unsafe-local', dev_mode=True)"
                )
            work_root = jail.JAIL_WORK
        else:
            self._host_work = tempfile.mkdtemp(prefix="autograder-unsafe-")
            work_root = self._host_work
        self.work_root = work_root
        argv = jail.zygote_argv(self.config, theirs.fileno(), work_root)
        self._stderr_tail: deque[bytes] = deque(maxlen=64)
        self.proc = launcher.popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            pass_fds=(theirs.fileno(),),
            env=dict(jail.CLEAN_ENV),
            start_new_session=True,
        )
        theirs.close()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        ready = self._receive(config.zygote_start_timeout_s)
        self.inner_pid = int(ready["pid"])
        self.host_pid = self._find_host_pid(self.proc.pid, self.inner_pid)
        # How deep the zygote's pid namespace is: a child's pid as the zygote knows it sits at this index of its
        # NSpid line (the child's own, innermost pid namespace comes after it).
        self._ns_level = len(procfs.ns_pids(self.host_pid)) - 1

    def _drain_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self._stderr_tail.append(line[:500])

    def _find_host_pid(self, root: int, inner: int) -> int:
        if not self.config.sandboxed:
            return inner
        found = procfs.find_descendant(root, inner)
        if found is None:
            raise SandboxError("cannot find the zygote's host pid")
        return found

    def child_host_pid(self, inner: int) -> int:
        """The host pid of a child the zygote forked (``inner`` is its pid in the zygote's pid namespace)."""
        if not self.config.sandboxed:
            return inner
        for pid in procfs.children(self.host_pid):
            nspid = procfs.ns_pids(pid)
            if 0 < self._ns_level < len(nspid) and nspid[self._ns_level] == inner:
                return pid
        raise SandboxError(f"cannot find the host pid of jailed child {inner}")

    def request(self, msg: dict[str, Any], fds: list[int] | None = None) -> dict[str, Any]:
        """One request and its reply; thread-safe (the slot's housekeeper forks and reaps beside the grading)."""
        with self._lock:
            try:
                socket.send_fds(self._ctl, [json.dumps(msg).encode()], fds or [])
            except OSError as exc:
                raise SandboxError(f"zygote control channel failed: {exc}{self.stderr_tail()}") from exc
            reply = self._receive(CONTROL_TIMEOUT_S)
        if "error" in reply:
            raise SandboxError(f"zygote refused {msg.get('op')}: {reply['error']}")
        return reply

    def _receive(self, timeout_s: float) -> dict[str, Any]:
        # poll, not select: select() fails outright once the grading process holds fd numbers above 1023.
        ready = bool(poll_ready([self._ctl.fileno()], [], max(0.0, timeout_s))[0])
        data = self._ctl.recv(65536) if ready else b""
        if not data:
            raise SandboxError(f"the zygote did not answer ({'closed' if ready else 'timeout'}){self.stderr_tail()}")
        reply = json.loads(data)
        if not isinstance(reply, dict):
            raise SandboxError("malformed zygote reply")
        return reply

    def stderr_tail(self) -> str:
        text = b"".join(self._stderr_tail).decode(errors="replace").strip()
        return f"; zygote stderr: {text[-2000:]}" if text else ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._ctl.close()
        if self.proc.poll() is None:
            # killing bwrap (--die-with-parent) takes its pid namespace, and so every jailed process, with it
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, 9)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=10)
        if self._host_work is not None:
            shutil.rmtree(self._host_work, ignore_errors=True)
