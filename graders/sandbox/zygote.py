"""The pre-warmed process that forks one child per submission. Runs inside the jail (bubblewrap) as its init.

Started with a clean environment, it imports torch and numpy, runs one float64 attention-like forward+backward with a
single thread (OpenMP after fork hangs otherwise), and then only waits for commands on its control socket. It holds
nothing secret: no checks, no reference values, no database; it never imports graders.code.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import sys
import time
from typing import Any

import numpy
import torch

from graders.sandbox import child, codec, lockdown, wire

PR_SET_CHILD_SUBREAPER = 36
MAX_CONTROL_BYTES = 65536


def warm_up() -> None:
    """Touch every lazily-loaded piece a typical submission needs, so that no child pays (or fails) for it."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 4, 8, dtype=torch.float64, requires_grad=True) for _ in range(3))
    mask = torch.rand(2, 4, 4) > 0.5
    scores = (q @ k.transpose(-2, -1)) / 8**0.5
    weights = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1).nan_to_num(0.0)
    out = weights @ v
    torch.autograd.grad(out, [q, k, v], torch.ones_like(out), retain_graph=True)
    out.sum().backward()
    torch.nn.functional.scaled_dot_product_attention(q.detach(), k.detach(), v.detach())
    torch.nn.Linear(8, 8)(torch.randn(3, 8)).relu().mean().backward()
    numpy.linalg.norm(numpy.ones(3))
    wire.encode_frame({"warm": True}, codec.encode_value(torch.ones(2), codec.Caps())[1])


def set_subreaper() -> None:
    """Orphans of a child (a double fork) are re-parented here, where the reaper finds them."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def pids_of_uid(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except OSError:
                continue
    return found


class Zygote:
    def __init__(self, ctl: socket.socket, work_root: str, device: str, max_bytes: int) -> None:
        self.ctl, self.work_root, self.device = ctl, work_root, device
        self.caps = codec.Caps(max_bytes=max_bytes)
        self.exited: dict[int, int] = {}

    def serve(self) -> None:
        self.ctl.send(json.dumps({"op": "ready", "pid": os.getpid()}).encode())
        while True:
            data, fds, _flags, _addr = socket.recv_fds(self.ctl, MAX_CONTROL_BYTES, 8)
            if not data:
                return
            msg = json.loads(data)
            try:
                reply = self.handle(msg, fds)
            except Exception as exc:
                reply = {"error": f"{type(exc).__name__}: {exc}"}
            finally:
                for fd in fds:
                    os.close(fd)
            self.ctl.send(json.dumps(reply).encode())

    def handle(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        if msg["op"] == "spawn":
            return self.spawn(lockdown.ChildSpec(**msg["spec"]), fds)
        if msg["op"] == "reap":
            return self.reap(int(msg["pid"]), msg["uid"], msg["workdir"])
        if msg["op"] == "ping":
            return {"ok": True}
        raise ValueError(f"unknown op {msg['op']!r}")

    def spawn(self, spec: lockdown.ChildSpec, fds: list[int]) -> dict[str, Any]:
        if len(fds) != 3:
            raise ValueError("spawn needs exactly three fds")
        shutil.rmtree(spec.workdir, ignore_errors=True)
        os.makedirs(spec.workdir, mode=0o700)
        if spec.uid is not None:
            os.chown(spec.workdir, spec.uid, spec.uid)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self.ctl.close()
            child.run_child(spec, (fds[0], fds[1], fds[2]), self.device, self.caps)
        return {"pid": pid}

    def reap(self, pid: int, uid: int | None, workdir: str) -> dict[str, Any]:
        """Kill what is left of a run, collect its exit status, wipe its working dir."""
        for _ in range(5000):  # ~5 s: a SIGKILLed process normally goes within a few ms
            if uid is not None:  # every process of the slot's uid belongs to this run (one run per slot)
                for victim in pids_of_uid(uid):
                    _kill(victim)
            _kill_group(pid)
            status = self._wait(pid)
            if status is not None and (uid is None or not pids_of_uid(uid)):
                break
            time.sleep(0.001)
        self._collect()
        self.exited.clear()
        shutil.rmtree(workdir, ignore_errors=True)
        return {"ok": True, "status": status}

    def _wait(self, pid: int) -> int | None:
        self._collect()
        return self.exited.pop(pid, None)

    def _collect(self) -> None:
        """Reap every exited child (the run's own and orphans handed to this subreaper), keeping statuses."""
        while True:
            try:
                done, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if done == 0:
                return
            self.exited[done] = status


def _kill(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(OSError):
        os.killpg(pgid, signal.SIGKILL)


def main() -> None:
    """argv: control fd, work root, device, max transfer bytes, sandboxed (1/0)."""
    ctl_fd, work_root, device, max_bytes, sandboxed = sys.argv[1:6]
    set_subreaper()
    warm_up()
    if sandboxed == "1":
        from graders.sandbox import seccomp_filter

        seccomp_filter.build_filter()  # loads libseccomp now, while the zygote can still read everything
    ctl = socket.socket(fileno=int(ctl_fd))
    Zygote(ctl, work_root, device, int(max_bytes)).serve()


if __name__ == "__main__":
    main()
