"""The pre-warmed process that forks one child per submission. Runs inside the jail (bubblewrap) as its init.

Started with a clean environment, it imports torch and numpy, runs one float64 attention-like forward+backward with a
single thread (OpenMP after fork hangs otherwise), and then only waits for commands on its control socket. It holds
nothing secret: no checks, no reference values, no database; it never imports graders.code.

Sandboxed, every child gets a pid namespace of its own (``Zygote._fork_isolated``): the zygote unshares a fresh one,
starts a tiny init in it (pid 1, as "nobody": it only reaps orphans, and when it dies the kernel kills everything left
in the namespace), forks the child into it (pid 2), and goes back to its own namespace. The child's pids, its /proc
(it mounts one, ``lockdown.unshare_namespaces``) and ns_last_pid then say nothing of earlier submissions, and the
zygote is not in it.
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
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

from graders.sandbox import child, codec, lockdown, procfs, wire
from graders.sandbox.pidns_init import ignores_sigchld, init_argv, run_init

PR_SET_CHILD_SUBREAPER = 36
CLONE_NEWPID = 0x20000000
INIT_READY_TIMEOUT_S = 5.0
MAX_CONTROL_BYTES = 65536
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
MNT_DETACH = 2
MAX_INODES = 50_000  # files + dirs one child may create in its working dir
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


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
    """By the real uid in /proc/PID/status: /proc/PID itself belongs to root for a child, which is not dumpable."""
    return procfs.pids_of_uid(uid)


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
    def __init__(
        self, ctl: socket.socket, work_root: str, device: str, max_bytes: int, sandboxed: bool = False
    ) -> None:
        self.ctl, self.work_root, self.device, self.sandboxed = ctl, work_root, device, sandboxed
        # Nothing the zygote holds may leak into an exec'd init: only 0-2 are inheritable (the children it forks
        # close every fd anyway).
        os.set_inheritable(ctl.fileno(), False)
        self.init_argv = init_argv() if sandboxed else None
        self.caps = codec.Caps(max_bytes=max_bytes)
        self.exited: dict[int, int] = {}
        self.children: set[int] = set()  # forked and not yet reaped through a "reap" request
        self.inits: dict[int, int] = {}  # a sandboxed child's pid -> the init of its pid namespace
        self._own_pidns: int | None = None  # an fd of the zygote's own pid namespace, to return to after a spawn
        self._spare: tuple[int, int] | None = None  # (init pid, namespace fd) made ahead for the next spawn

    def serve(self) -> None:
        if self.sandboxed:
            self.prepare_namespace()
        self.ctl.send(json.dumps({"op": "ready", "pid": os.getpid()}).encode())
        while True:
            data, fds, _flags, _addr = socket.recv_fds(self.ctl, MAX_CONTROL_BYTES, 8)
            for fd in fds:
                os.set_inheritable(fd, False)
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
            if self.sandboxed and msg.get("op") in ("reap", "spawn"):  # between spawns, off the next one's path
                self.prepare_namespace()

    def handle(self, msg: dict[str, Any], fds: list[int]) -> dict[str, Any]:
        if msg["op"] == "spawn":
            return self.spawn(lockdown.ChildSpec(**msg["spec"]), fds)
        if msg["op"] == "reap":
            return self.reap(int(msg["pid"]), msg["uid"], msg["workdir"])
        if msg["op"] == "ping":
            return {"ok": True}
        raise ValueError(f"unknown op {msg['op']!r}")

    def spawn(self, spec: lockdown.ChildSpec, fds: list[int]) -> dict[str, Any]:
        """Fork one child; the reply's "t" holds monotonic stamps of each stage (the stage profile only)."""
        if len(fds) != 3:
            raise ValueError("spawn needs exactly three fds")
        stamps = [("start", time.monotonic())]
        error = wipe(spec.workdir)
        if error is not None:
            raise RuntimeError(f"cannot clear the working dir: {error}")
        stamps.append(("wipe", time.monotonic()))
        os.makedirs(spec.workdir, mode=0o700)
        if spec.sandboxed:
            mount_workdir(spec.workdir, spec.workdir_mb, spec.uid)
        elif spec.uid is not None:
            os.chown(spec.workdir, spec.uid, spec.uid)
        stamps.append(("tmpfs", time.monotonic()))
        sys.stdout.flush()
        sys.stderr.flush()
        pid = self._fork_isolated(spec, fds, stamps) if spec.sandboxed else self._fork_child(spec, fds)
        stamps.append(("forked", time.monotonic()))
        self.children.add(pid)
        return {"pid": pid, "t": stamps}

    def _fork_child(self, spec: lockdown.ChildSpec, fds: list[int]) -> int:
        pid = os.fork()
        if pid == 0:
            try:
                self.ctl.close()
                child.run_child(spec, (fds[0], fds[1], fds[2]), self.device, self.caps)
            finally:
                os._exit(70)
        return pid

    def _fork_isolated(self, spec: lockdown.ChildSpec, fds: list[int], stamps: list[tuple[str, float]]) -> int:
        """Fork the child as pid 2 of a fresh pid namespace whose pid 1 is a per-run init (``init_argv``).

        Both are children of the zygote: ``reap`` gets the child's own exit status and kills the init. The
        namespace and its init are usually made ahead, between runs (``prepare_namespace``), off the spawn's path.
        """
        self._collect()
        spare, self._spare = self._spare, None
        if spare is not None and (spare[0] in self.exited or ignores_sigchld(spare[0]) is None):
            # Its init died (its namespace would take no new process): a fresh one instead. Not signalled: once
            # collected, its pid may belong to another process.
            self.exited.pop(spare[0], None)
            os.close(spare[1])
            spare = None
        init, ns_fd = spare if spare is not None else self._new_namespace()
        stamps.append(("pidns" if spare is None else "pidns_ready", time.monotonic()))
        try:
            self._enter_pidns(ns_fd)
            try:
                pid = self._fork_child(spec, fds)
            finally:
                self._enter_pidns(self._own())
            stamps.append(("fork", time.monotonic()))
            # Before the reply, not before the fork: no student code runs before the trusted side's "go", which
            # follows the reply, so no orphan can reach the init earlier; the child's lockdown overlaps the wait.
            self._wait_for_init(init)
        except BaseException:
            _kill(init)  # the namespace goes with its init (the child too); the next _collect reaps them
            raise
        finally:
            os.close(ns_fd)
        self.inits[pid] = init
        return pid

    def prepare_namespace(self) -> None:
        """Make the next run's pid namespace and init now, if none is waiting. Never raises: spawn retries inline."""
        if self._spare is None:
            with contextlib.suppress(OSError):
                self._spare = self._new_namespace()

    def _new_namespace(self) -> tuple[int, int]:
        """A fresh pid namespace whose pid 1 is a new per-run init: (the init's pid, an fd of the namespace).

        unshare(CLONE_NEWPID) only changes where the zygote's *next* children go; the zygote returns to its own
        namespace at once (the kernel refuses a second unshare otherwise), and enters this one again with setns to
        fork the child.
        """
        if libc().unshare(CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWPID) failed")
        try:
            if self.init_argv is not None:
                init = os.posix_spawn(self.init_argv[0], self.init_argv, {})
            else:
                init = os.fork()
                if init == 0:
                    run_init()
            ns_fd = os.open("/proc/self/ns/pid_for_children", os.O_RDONLY | os.O_CLOEXEC)
        finally:
            self._enter_pidns(self._own())
        return init, ns_fd

    def _wait_for_init(self, init: int) -> None:
        """Until the init ignores SIGCHLD (its exec chain takes ~2 ms): an orphan adopted before would stay a zombie."""
        deadline = time.monotonic() + INIT_READY_TIMEOUT_S
        while (ready := ignores_sigchld(init)) is not True:
            if ready is None or time.monotonic() > deadline:
                raise OSError(f"the per-run init {'died' if ready is None else 'did not start'}")
            time.sleep(0.0002)

    def _own(self) -> int:
        if self._own_pidns is None:
            self._own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        return self._own_pidns

    def _enter_pidns(self, ns_fd: int) -> None:
        """Where the zygote's next children go: its own pid namespace, or one made by ``_new_namespace``."""
        if libc().setns(ns_fd, CLONE_NEWPID) != 0:
            raise OSError(ctypes.get_errno(), "setns(CLONE_NEWPID) failed")

    def reap(self, pid: int, uid: int | None, workdir: str) -> dict[str, Any]:
        """Kill what is left of a run, collect its exit status, wipe its working dir.

        A failed wipe is reported (``cleanup_error``), never raised: the trusted side keeps the run's result and
        restarts this zygote before the next run.
        """
        status = None
        start = time.monotonic()
        init = self.inits.pop(pid, None)
        self._collect()
        if init is not None and self.exited.pop(init, None) is not None:
            init = None  # it died already (and its pid may be reused): never signal it
        for _ in range(5000):  # ~5 s: a SIGKILLed process normally goes within a few ms
            if init is not None:  # the run's pid namespace dies with its init: every process in it is SIGKILLed
                _kill(init)
            if uid is not None:  # every process of the seat's uid belongs to this run (one live child per seat)
                for victim in pids_of_uid(uid):
                    _kill(victim)
            _kill_group(pid)
            # Collect on every round, not only until the child's own status is in: an orphan handed to this
            # subreaper stays a zombie of the uid (and the loop spun for its whole ~5 s) until it is collected.
            self._collect()
            if status is None:
                status = self.exited.pop(pid, None)
            if init is not None and self.exited.pop(init, None) is not None:
                init = None  # reaped: the kernel has then removed every process of its namespace
            if status is not None and init is None and (uid is None or not pids_of_uid(uid)):
                break
            time.sleep(0.001)
        self._collect()
        self.children.discard(pid)
        # Keep only statuses of children still running a request (the student's, while a reference child is reaped).
        live = self.children | set(self.inits.values()) | ({self._spare[0]} if self._spare is not None else set())
        self.exited = {p: s for p, s in self.exited.items() if p in live}
        collected = time.monotonic()
        error = wipe(workdir)
        stamps = [("start", start), ("collected", collected), ("wiped", time.monotonic())]
        return {"ok": True, "status": status, "cleanup_error": error, "t": stamps}

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
    # Everything the zygote holds now goes to the collector's permanent generation: a collection in a child then
    # never walks (and so never copies on write) the objects of the warmed heap.
    gc.collect()
    gc.freeze()
    child.list_sandbox_modules()
    Zygote(ctl, work_root, device, int(max_bytes), sandboxed=sandboxed == "1").serve()


if __name__ == "__main__":
    main()
