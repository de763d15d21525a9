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
import signal
import socket
import stat
import sys
import time
from typing import Any

import numpy
import torch

from graders.sandbox import child, codec, lockdown, wire

PR_SET_CHILD_SUBREAPER = 36
MAX_CONTROL_BYTES = 65536
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MNT_DETACH = 2
MAX_INODES = 50_000  # files + dirs one child may create in its working dir
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


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


def mount_workdir(path: str, size_mb: int, uid: int | None) -> None:
    """Give a child its own small tmpfs: wiping it afterwards is one lazy unmount, however many files it made."""
    opts = f"size={size_mb}m,nr_inodes={MAX_INODES},mode=0700"
    if uid is not None:
        opts += f",uid={uid},gid={uid}"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts.encode()) != 0:
        raise OSError(ctypes.get_errno(), f"mounting the working dir tmpfs failed: {os.strerror(ctypes.get_errno())}")


def unmount(path: str) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    while os.path.ismount(path):  # one child's dir could in theory be mounted over twice
        if libc.umount2(path.encode(), MNT_DETACH) != 0:
            raise OSError(ctypes.get_errno(), f"unmounting the working dir failed: {os.strerror(ctypes.get_errno())}")


def remove_tree(path: str) -> None:
    """Delete a directory tree with neither recursion nor long paths: any depth, any number of entries.

    Every sub-directory found below the top level is first renamed to the top level (fd-relative), so no path ever
    grows and no call stack deepens; shutil.rmtree raised RecursionError on a 3000-deep tree.
    """
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(mode):
        os.unlink(path)
        return
    root = os.open(path, _DIR_FLAGS)
    counter = 0
    pending: list[str] = []

    def empty(dir_fd: int) -> None:
        nonlocal counter
        with os.scandir(dir_fd) as it:
            entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
        for name, is_dir in entries:
            if not is_dir:
                os.unlink(name, dir_fd=dir_fd)
            elif dir_fd == root:
                pending.append(name)
            else:
                while True:
                    counter += 1
                    moved = f".autograder-wipe-{counter}"
                    try:
                        os.lstat(moved, dir_fd=root)
                    except FileNotFoundError:
                        break
                os.rename(name, moved, src_dir_fd=dir_fd, dst_dir_fd=root)
                pending.append(moved)

    try:
        empty(root)
        while pending:
            name = pending.pop()
            fd = os.open(name, _DIR_FLAGS, dir_fd=root)
            try:
                empty(fd)
            finally:
                os.close(fd)
            os.rmdir(name, dir_fd=root)
    finally:
        os.close(root)
    os.rmdir(path)


def wipe(path: str) -> str | None:
    """Unmount and delete a child's working dir. Never raises: returns what went wrong, or None."""
    try:
        unmount(path)
        remove_tree(path)
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    return None


class Zygote:
    def __init__(self, ctl: socket.socket, work_root: str, device: str, max_bytes: int) -> None:
        self.ctl, self.work_root, self.device = ctl, work_root, device
        self.caps = codec.Caps(max_bytes=max_bytes)
        self.exited: dict[int, int] = {}
        self.children: set[int] = set()  # forked and not yet reaped through a "reap" request

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
        error = wipe(spec.workdir)
        if error is not None:
            raise RuntimeError(f"cannot clear the working dir: {error}")
        os.makedirs(spec.workdir, mode=0o700)
        if spec.sandboxed:
            mount_workdir(spec.workdir, spec.workdir_mb, spec.uid)
        elif spec.uid is not None:
            os.chown(spec.workdir, spec.uid, spec.uid)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            self.ctl.close()
            child.run_child(spec, (fds[0], fds[1], fds[2]), self.device, self.caps)
        self.children.add(pid)
        return {"pid": pid}

    def reap(self, pid: int, uid: int | None, workdir: str) -> dict[str, Any]:
        """Kill what is left of a run, collect its exit status, wipe its working dir.

        A failed wipe is reported (``cleanup_error``), never raised: the trusted side keeps the run's result and
        restarts this zygote before the next run.
        """
        status = None
        for _ in range(5000):  # ~5 s: a SIGKILLed process normally goes within a few ms
            if uid is not None:  # every process of the slot's uid belongs to this run (one run per slot)
                for victim in pids_of_uid(uid):
                    _kill(victim)
            _kill_group(pid)
            if status is None:
                status = self._wait(pid)
            if status is not None and (uid is None or not pids_of_uid(uid)):
                break
            time.sleep(0.001)
        self._collect()
        self.children.discard(pid)
        # Keep only statuses of children still running a request (the student's, while a reference child is reaped).
        self.exited = {p: s for p, s in self.exited.items() if p in self.children}
        return {"ok": True, "status": status, "cleanup_error": wipe(workdir)}

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
