"""Steps the forked child takes, in this order, before it runs a single line of student code.

The order (docs/sandbox.md, "Lockdown order", gives the reason for each step): setsid -> keep only the pipes ->
unshare the network, IPC and mount namespaces and mount this pid namespace's /proc -> rlimits -> drop to the slot's
uid -> one torch thread -> no_new_privs -> seccomp -> wait until the parent has put the pid in its cgroups -> fresh
working dir. The zygote forked the child as pid 2 of a pid namespace of its own. (The order first measured waited
for the cgroup right after the pipes; waiting last lets the parent's write overlap the lockdown, and still no student
code runs outside the cgroup.)
Each step is a small function so that the order reads in ``lock_down``.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import resource
from collections.abc import Callable
from dataclasses import dataclass

import torch

# The child's fd layout after keep_only_fds: stdin is /dev/null, stdout and stderr go to the capture pipe.
RPC_IN_FD, RPC_OUT_FD = 3, 4
CLONE_NEWNET = 0x40000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWNS = 0x00020000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 0x4000, 0x40000
# What bubblewrap covers read-only in the jail's /proc: the fresh /proc below covers them the same way.
PROC_COVERED = ("sys", "sysrq-trigger", "irq", "bus")
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
_MiB = 1024 * 1024


@dataclass(frozen=True)
class ChildSpec:
    """What the trusted side asks of one child (sent as JSON through the zygote)."""

    workdir: str
    sandboxed: bool  # False only in unsafe-local mode: no netns, no uid change, no seccomp
    uid: int | None
    memory_mb: int
    memory_by_rlimit: bool  # True when no memory cgroup holds the child
    cpu_s: int
    nproc: int
    fsize_mb: int
    nofile: int
    workdir_mb: int = 64  # size of the child's own tmpfs working dir (sandboxed)


# The fields a submission's limits may lower in a pre-forked child (``lower_rlimits``).
LIMIT_FIELDS = ("memory_mb", "cpu_s", "nproc", "fsize_mb", "nofile")


def keep_only_fds(rpc_in: int, rpc_out: int, output: int) -> None:
    """Move the three pipes to the fixed layout and close every other fd the zygote had."""
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 64) for fd in (rpc_in, rpc_out, output)]
    devnull = os.open(os.devnull, os.O_RDONLY)
    for target, source in ((0, devnull), (1, high[2]), (2, high[2]), (RPC_IN_FD, high[0]), (RPC_OUT_FD, high[1])):
        os.dup2(source, target)
    os.closerange(RPC_OUT_FD + 1, 1 << 20)


def wait_for_go() -> None:
    """Block until the trusted side has placed this pid in its cgroup (it then writes one byte)."""
    if os.read(RPC_IN_FD, 1) != b"G":
        raise RuntimeError("the trusted side did not release the child")


def unshare_namespaces() -> None:
    """Fresh network, IPC and mount namespaces, and in the last a /proc of the child's own pid namespace.

    The network namespace is empty (no loopback services, no sockets to the outside). The IPC namespace is per child,
    not per zygote: SysV shared memory, message queues and semaphores (and POSIX message queues) created by one
    submission die with its last process instead of surviving into the next one. The zygote forked this child into a
    pid namespace of its own (``Zygote._fork_isolated``), but the jail's /proc still shows the zygote's: the child
    mounts its own (``mount_proc``) in a mount namespace of its own, so that the zygote's mounts stay as they are.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWNS) failed")
    mount_proc(libc)


def _mount(
    libc: ctypes.CDLL, source: bytes | None, target: bytes, fstype: bytes | None, flags: int, data: bytes | None
) -> None:
    if libc.mount(source, target, fstype, flags, data) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"mount {target.decode()} failed: {os.strerror(errno)}")


def mount_proc(libc: ctypes.CDLL) -> None:
    """A /proc of this pid namespace: this run's processes only (hidepid=2: only the caller's uid's), its own pids.

    The mounts are made private first, so that nothing done here propagates back to the zygote's namespace.
    """
    _mount(libc, None, b"/", None, MS_REC | MS_PRIVATE, None)
    _mount(libc, b"proc", b"/proc", b"proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, b"hidepid=2")
    for name in PROC_COVERED:
        path = f"/proc/{name}".encode()
        if os.path.exists(path):
            _mount(libc, path, path, None, MS_BIND | MS_REC, None)
            _mount(libc, None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, None)


def vm_size_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("VmSize missing from /proc/self/status")


def _rlimits(spec: ChildSpec) -> list[tuple[int, int, int]]:
    limits = [
        # CPU: the soft limit sends SIGXCPU, the hard one a SIGKILL that cannot be ignored.
        (resource.RLIMIT_CPU, spec.cpu_s, spec.cpu_s + 1),
        (resource.RLIMIT_FSIZE, spec.fsize_mb * _MiB, spec.fsize_mb * _MiB),
        (resource.RLIMIT_NOFILE, spec.nofile, spec.nofile),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    if spec.sandboxed:  # per uid machine-wide: only meaningful for the slot's own uid
        limits.append((resource.RLIMIT_NPROC, spec.nproc, spec.nproc))
    if spec.memory_by_rlimit:  # the warmed zygote already maps ~660 MiB: the budget comes on top
        total = vm_size_bytes() + spec.memory_mb * _MiB
        limits.append((resource.RLIMIT_AS, total, total))
    return limits


def set_rlimits(spec: ChildSpec) -> None:
    for which, soft, hard in _rlimits(spec):
        resource.setrlimit(which, (soft, hard))


def lower_rlimits(spec: ChildSpec) -> None:
    """A pre-forked child's limits, from the pool's ceiling down to the submission's (``child.Server.limits``).

    Never above what lockdown set: after the uid change a hard limit can only go down (RLIMIT_AS, computed from the
    VmSize of now, may come out a little higher than at lockdown).
    """
    for which, soft, hard in _rlimits(spec):
        ceiling = resource.getrlimit(which)[1]
        if ceiling != resource.RLIM_INFINITY:
            soft, hard = min(soft, ceiling), min(hard, ceiling)
        resource.setrlimit(which, (soft, hard))


def drop_privileges(uid: int) -> None:
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    if os.getuid() != uid or os.geteuid() != uid:
        raise RuntimeError("uid change did not stick")


def no_new_privs() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
    # Not dumpable: the kernel writes no core dump at all, not even to a pipe core_pattern (which ignores
    # RLIMIT_CORE). Here, after the uid change, which resets the flag to fs.suid_dumpable; seccomp refuses to set it.
    if libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0) failed")


def enter_workdir(path: str) -> None:
    os.chdir(path)
    os.environ.clear()
    os.environ.update({"HOME": path, "TMPDIR": path, "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})


def lock_down(
    spec: ChildSpec, rpc_in: int, rpc_out: int, output: int, mark: Callable[[str], None] = lambda step: None
) -> None:
    """Apply every step in the measured order. Raises on any failure: the child must then exit unused.

    ``mark`` is called after each step with its name (the child's stage profile, docs/sandbox.md).
    """
    os.setsid()
    mark("setsid")
    keep_only_fds(rpc_in, rpc_out, output)
    mark("fds")
    if spec.sandboxed:
        unshare_namespaces()
        mark("namespaces")
    set_rlimits(spec)
    mark("rlimits")
    if spec.sandboxed:
        assert spec.uid is not None
        drop_privileges(spec.uid)
        mark("uid")
    torch.set_num_threads(1)
    no_new_privs()
    mark("no_new_privs")
    if spec.sandboxed:
        from graders.sandbox import seccomp_filter

        seccomp_filter.install(threads_only=spec.memory_by_rlimit)  # no memory cgroup: no new processes either
        mark("seccomp")
    # The parent's cgroup write (~10 ms under load: the kernel syncs RCU) overlaps the steps above; nothing of the
    # student's runs before it is done.
    wait_for_go()
    mark("go")
    enter_workdir(spec.workdir)
    mark("workdir")
