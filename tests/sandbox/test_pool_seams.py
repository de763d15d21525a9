"""What a pooled child can learn of the children before it and of how long it waited (prefork.py), attacked.

A child waits in its slot's pool from the moment it is forked until a submission takes it. It reads when it was
forked from its own start time (/proc/self/stat) and from the time its /proc was mounted (lockdown, right after the
fork); if the pool forked it while the submission before it ran (or earlier still), its age told it how long that
submission ran, hidden checks included. Its cgroups' paths (/proc/self/cgroup) were numbered in creation order: a
count of every child the grader had made. The probe is what a student's file can do.
"""

from __future__ import annotations

import itertools
import time
from typing import Any

import pytest

from graders.code.runner import CodeGrader
from graders.sandbox.slot import STUDENT
from tests.sandbox.test_sandbox_pool import BIG, call, child

PROBE = r"""
import os, time

def probe():
    stat = open("/proc/self/stat").read()
    fields = stat[stat.rindex(")") + 2:].split()
    return {
        "cgroup": open("/proc/self/cgroup").read(),
        "started_s": int(fields[19]) / os.sysconf("SC_CLK_TCK"),
        "proc_mounted": os.stat("/proc").st_mtime,
        "cwd_times": [os.stat(".").st_mtime, os.stat(".").st_ctime],
    }
"""

TICK_S = 0.011  # /proc/self/stat counts start times in 10 ms ticks, rounded down
COARSE_S = 0.05  # inode times come from the kernel's coarse clock, a tick or so behind time.time()


def leaf_counter(line: str) -> int | None:
    """The attack on a /proc/self/cgroup line: the number in the last path part's last name part, if any."""
    leaf = line.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    last = leaf.rsplit("-", 1)[-1].lstrip("rs")
    return int(last) if last.isdecimal() else None


def cgroup_lines(seen: dict[str, Any]) -> list[str]:
    return [line for line in seen["cgroup"].splitlines() if line.rsplit(":", 1)[-1] != "/"]


def test_cgroup_names_carry_no_counter(grader: CodeGrader) -> None:
    """Three children in a row read their groups' names: no number in them grows from one child to the next."""
    slot = grader._pool.slots[0]
    seen = []
    for _ in range(3):
        slot.settle()
        with child(slot, BIG, STUDENT, PROBE) as process:
            seen.append(call(process, "probe"))
    lines = [cgroup_lines(s) for s in seen]
    if not lines[0]:
        pytest.skip("no cgroup holds the children here")
    assert len({len(x) for x in lines}) == 1, lines
    checked = 0
    for per_child in zip(*lines, strict=True):  # the same hierarchy line of each child, in order
        if len(set(per_child)) == 1:
            continue  # the slot's own group (cpu), the same for every child of the slot
        assert len(set(per_child)) == len(per_child), per_child
        counters = [leaf_counter(line) for line in per_child]
        counting = None not in counters and all(a < b for a, b in itertools.pairwise(counters))
        assert not counting, f"the children's group names count them: {per_child}"
        checked += 1
    assert checked, lines  # at least one group of the child's own (memory, pids, cpuacct)


def _borrowed_run(grader: CodeGrader, seconds: float) -> tuple[float, float]:
    """One submission's worth of a slot, as the grader holds it: borrow, a pooled child runs a while, give back.

    Returns the boot and wall clocks read while the slot is still held: every later fork comes after them, however
    long this thread waits for a core once the slot is given back (the housekeeper may fork at once)."""
    with grader._pool.borrow() as slot, child(slot, BIG, STUDENT, PROBE) as process:
        call(process, "probe")
        time.sleep(seconds)  # the submission's checks, visible and hidden
        return time.clock_gettime(time.CLOCK_BOOTTIME), time.time()


def _next_child_sees(grader: CodeGrader) -> dict[str, Any]:
    grader._pool.settle()
    with grader._pool.borrow() as slot, child(slot, BIG, STUDENT, PROBE) as process:
        seen: dict[str, Any] = call(process, "probe")
        return seen


def test_a_pooled_child_was_forked_after_the_submission_before_it(grader: CodeGrader) -> None:
    """The next submission's child starts after the last one gave the slot back: its age tells nothing of that run.

    Checked as an order, not a duration: its start time and its /proc's mount time are not before the moment the
    submission before it ended (on main, the pool forked it while that submission ran, or before it started).
    """
    assert len(grader._pool.slots) == 1  # so the second borrow gets the slot the first one used
    grader._pool.settle()
    ended_boot, ended_real = _borrowed_run(grader, 0.5)
    seen = _next_child_sees(grader)
    assert seen["started_s"] >= ended_boot - TICK_S, (seen["started_s"], ended_boot)
    assert seen["proc_mounted"] >= ended_real - COARSE_S, (seen["proc_mounted"], ended_real)
    assert min(seen["cwd_times"]) >= ended_real - COARSE_S, (seen["cwd_times"], ended_real)


def test_every_child_of_the_pool_is_fresh_after_a_submission(grader: CodeGrader) -> None:
    """With two children per role waiting, neither serves after the submission they waited through."""
    slot = grader._pool.slots[0]
    grader._pool.settle()
    before = set(slot.pool.pooled_pids())
    assert len(before) >= 2
    _borrowed_run(grader, 0.0)
    grader._pool.settle()
    after = set(slot.pool.pooled_pids())
    assert after and not after & before


COUNTERS_PROBE = r'''
import ctypes, os, socket

def counters():
    """Host-wide counters a process can read of itself: each is a count of the processes or mounts made before."""
    seen = {}
    try:
        fd = os.pidfd_open(os.getpid())
        seen["pidfd_inode"] = os.fstat(fd).st_ino
    except OSError as exc:
        seen["pidfd_inode"] = exc.errno
    a, b = socket.socketpair()
    try:
        fd = a.getsockopt(socket.SOL_SOCKET, 77)  # SO_PEERPIDFD (Linux 6.5)
        seen["peer_pidfd_inode"] = os.fstat(fd).st_ino
    except OSError as exc:
        seen["peer_pidfd_inode"] = exc.errno
    libc = ctypes.CDLL(None, use_errno=True)
    buf = ctypes.create_string_buffer(256)
    AT_FDCWD, STATX_MNT_ID_UNIQUE = -100, 0x4000
    if libc.syscall(332, AT_FDCWD, b"/proc", 0, STATX_MNT_ID_UNIQUE, buf) == 0:  # statx (x86_64)
        mask = int.from_bytes(buf.raw[0:4], "little")
        seen["mount_id"] = int.from_bytes(buf.raw[144:152], "little") if mask & STATX_MNT_ID_UNIQUE else None
    else:
        seen["mount_id"] = ctypes.get_errno()
    return seen
'''


def test_a_child_reads_no_host_wide_counter_of_processes_or_mounts(grader: CodeGrader) -> None:
    """pidfs numbers every process of the host from one counter, and the unique mount id every mount: refused."""
    import errno
    import platform

    slot = grader._pool.slots[0]
    slot.settle()
    with child(slot, BIG, STUDENT, COUNTERS_PROBE) as process:
        seen = call(process, "counters")
    assert seen["pidfd_inode"] in (errno.ENOSYS, errno.EPERM), seen
    assert seen["peer_pidfd_inode"] in (errno.ENOPROTOOPT, errno.EPERM), seen
    if platform.machine() == "x86_64":
        assert seen["mount_id"] in (None, errno.EPERM, errno.ENOSYS, errno.EINVAL), seen


NAMESPACE_PROBE = r"""
import ctypes, fcntl, os, struct

NS_GET_ID = (2 << 30) | (8 << 16) | (0xB7 << 8) | 0x0D  # _IOR(0xb7, 0xd, __u64), Linux 6.18
NS_GET_MNTNS_ID = (2 << 30) | (8 << 16) | (0xB7 << 8) | 0x05

def namespaces():
    seen = {}
    for name in ("pid", "net", "ipc", "mnt", "uts", "cgroup", "time"):
        fd = os.open(f"/proc/self/ns/{name}", os.O_RDONLY)
        for request, label in ((NS_GET_ID, "id"), (NS_GET_MNTNS_ID, "mntns_id")):
            try:
                seen[f"{name}.{label}"] = struct.unpack("Q", fcntl.ioctl(fd, request, bytes(8)))[0]
            except OSError as exc:
                seen[f"{name}.{label}"] = -exc.errno
        os.close(fd)
    return seen
"""


def test_a_child_reads_no_namespace_id(grader: CodeGrader) -> None:
    """Every namespace has a 64-bit id from one host-wide counter (NS_GET_ID, Linux 6.18); a child's own pid, net,
    IPC and mount namespaces are made for it, so their ids counted the namespaces the host made before it. Every
    nsfs ioctl is refused: before, two children in a row read ids 4 apart (one child's namespaces) or more."""
    import errno

    slot = grader._pool.slots[0]
    slot.settle()
    with child(slot, BIG, STUDENT, NAMESPACE_PROBE) as process:
        seen = call(process, "namespaces")
    assert all(value in (-errno.EPERM, -errno.EINVAL, -errno.ENOTTY) for value in seen.values()), seen
    assert -errno.EPERM in seen.values(), seen  # refused by the filter, not merely unknown to this kernel
