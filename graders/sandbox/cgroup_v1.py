"""cgroup v1: a memory, a pids and a cpuacct group per child, under the trusted process's own groups (the cpuacct
one inside its slot's); a cpu group per slot.

The PARENT writes the child's pid (0.3 ms; a child moving itself costs ~9 ms). The per-child groups also give the
cleanup a complete list of the run's processes, double-forked daemons included. Each controller is a hierarchy of
its own in v1, so a child is written into up to four groups: its memory and pids groups, its slot's cpu group and
its own cpuacct group inside the slot's (where cpu and cpuacct are mounted together, that one group inside the
slot's), which times its calls' work (``cpu_usage_usec``). The slot's groups are not read for the
run's members: the slot's other child (a hidden check's, a reference run's) may be in them too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from graders.sandbox.cgroup_common import (
    SLOT_CPU_PERIOD_US,
    SLOT_CPU_QUOTA_US,
    SLOT_CPU_SHARES,
    fresh_name,
    owner_is_dead,
    remove_dir,
)

V1_ROOT = Path("/sys/fs/cgroup")


def own_v1_group(controller: str) -> Path | None:
    """This process's own group of a cgroup v1 controller, if it exists and this process may write it."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, names, path = line.split(":", 2)
        if controller in names.split(","):
            group = V1_ROOT / controller / path.lstrip("/")
            return group if (group / "cgroup.procs").exists() and os.access(group, os.W_OK) else None
    return None


def _members(group: Path) -> set[int]:
    with contextlib.suppress(OSError, ValueError):
        return {int(x) for x in (group / "cgroup.procs").read_text().split()}
    return set()


class ChildCgroupV1:
    """One child's groups: ``memory`` and ``pids`` are its own; ``joined`` (the slot's cpu groups) are shared.

    ``cpuacct``, where there is one, is the child's own accounting group, inside its slot's (cpuacct counts
    hierarchically, so the slot's figure still holds it): what a timed call used, however many processes it started,
    without a spare child's lockdown or another child of the slot in the figure.
    """

    version = "v1"

    def __init__(
        self, memory: Path, pids: Path | None, joined: tuple[Path, ...] = (), cpuacct: Path | None = None
    ) -> None:
        self.memory, self.pids, self.joined, self.cpuacct = memory, pids, joined, cpuacct

    def add(self, pid: int) -> None:
        for group in (self.memory, self.pids, *self.joined, self.cpuacct):
            if group is not None:
                (group / "cgroup.procs").write_text(str(pid))

    def lower(self, memory_bytes: int, pids_max: int) -> None:
        """A pre-forked child's limits, from the pool's ceiling down to a submission's (a write each, no move).

        The memory limit goes first: memsw may never be below it.
        """
        (self.memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (self.memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        if self.pids is not None:
            (self.pids / "pids.max").write_text(str(pids_max))

    def procs(self) -> list[int]:
        found: set[int] = set()
        for group in (self.memory, self.pids):
            if group is not None:
                found |= _members(group)
        return sorted(found)

    def signal_all(self) -> None:
        """One SIGKILL to every current member, without waiting."""
        for pid in self.procs():
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        """SIGKILL every member until none is left (a fork bomb keeps forking while it is killed)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.procs():
                return True
            self.signal_all()
            time.sleep(0.001)
        return not self.procs()

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer or the limit fired in this group."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.memory / "memory.oom_control").read_text().splitlines():
                if line.startswith("oom_kill ") and int(line.split()[1]) > 0:
                    return True
        with contextlib.suppress(OSError, ValueError):
            return int((self.memory / "memory.failcnt").read_text()) > 0
        return False

    def cpu_usage_usec(self) -> int | None:
        """CPU time of every process of this child so far, forks included (its cpuacct group; None without one)."""
        return _cpuacct_usage_usec(self.cpuacct)

    def remove(self) -> None:
        for group in (self.memory, self.pids, self.cpuacct):
            if group is not None:
                remove_dir(group)


class TrustedCgroupV1:
    """A trusted process's place in its slot: the slot's cpu group and an accounting group of its own."""

    def __init__(self, joined: tuple[Path, ...], cpuacct: Path | None) -> None:
        self.joined, self.cpuacct = joined, cpuacct

    def add(self, pid: int) -> None:
        for group in (*self.joined, self.cpuacct):
            if group is not None:
                (group / "cgroup.procs").write_text(str(pid))

    def cpu_usage_usec(self) -> int | None:
        return _cpuacct_usage_usec(self.cpuacct)

    def remove(self) -> None:
        """After its processes are gone (the slot's own groups stay)."""
        if self.cpuacct is not None:
            remove_dir(self.cpuacct)


class SlotCgroupV1:
    """One slot: its CPU share (a cpu group, and a cpuacct group for its accounting) and its children's groups."""

    version = "v1"

    def __init__(self, hierarchy: CgroupV1, cpu: Path | None, cpuacct: Path | None) -> None:
        self.hierarchy, self.cpu, self.cpuacct = hierarchy, cpu, cpuacct
        self.threads: Path | None = None  # the service's grading thread's group inside the slot's (``this_thread``)

    def create(self, memory_bytes: int, pids_max: int) -> ChildCgroupV1:
        # The child's own accounting group inside the slot's; mounted together with cpu, that group is also a cpu
        # group inside the slot's, whose share and quota still bound it.
        joined = () if self.cpu is None or self.cpu == self.cpuacct else (self.cpu,)
        return self.hierarchy.create_child(memory_bytes, pids_max, joined, self.cpuacct)

    def trusted(self) -> TrustedCgroupV1 | None:
        """A group for a trusted process of this slot: in its cpu group, with a cpuacct group of its own inside the
        slot's (None without a cpu group, where no CPU share exists to put it in)."""
        if self.cpu is None:
            return None
        own = None
        if self.cpuacct is not None:
            own = self.cpuacct / f"autograder-{os.getpid()}-{fresh_name('t')}"
            own.mkdir()
        joined = () if own is not None and self.cpu == self.cpuacct else (self.cpu,)
        return TrustedCgroupV1(joined, own)

    @contextlib.contextmanager
    def this_thread(self) -> Iterator[None]:
        """The calling thread in this slot's cpu group meanwhile: the service's grading thread, which decodes the
        slot's replies and answers its reverse calls, shares the slot's CPU share. v1 moves one thread at a time
        (its ``tasks`` file); it goes back to the service's own group afterwards, whatever happened. It goes into a
        group of its own inside the slot's, never the slot's group itself: the slot's cleanup kills what is in the
        slot's groups, and a thread there lists the whole service among the members."""
        home = self.hierarchy.cpu_parent
        if self.cpu is None or home is None:
            yield
            return
        if self.threads is None:
            self.threads = self.cpu / f"autograder-{os.getpid()}-{fresh_name('g')}"
            self.threads.mkdir()
        tid = str(threading.get_native_id())
        (self.threads / "tasks").write_text(tid)
        try:
            yield
        finally:
            (home / "tasks").write_text(tid)

    def _child_groups(self) -> list[Path]:
        return sorted(self.cpuacct.glob("autograder-*-*")) if self.cpuacct is not None else []

    def cpu_settings(self) -> dict[str, str]:
        """What the kernel holds for this slot's CPU share, read back from its files."""
        if self.cpu is None:
            return {}
        names = ("cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us")
        return {name: (self.cpu / name).read_text().strip() for name in names}

    def cpu_usage_usec(self) -> int | None:
        """CPU time used by every process that ran in this slot (cpuacct), or None without a cpuacct group."""
        if self.cpuacct is None:
            return None
        return int((self.cpuacct / "cpuacct.usage").read_text()) // 1000

    def remove(self) -> None:
        if self.threads is not None:  # never killed: it holds the service's own threads while they grade
            with contextlib.suppress(OSError):
                self.threads.rmdir()
        for child in self._child_groups():  # normally gone: each child's finish removes its own
            if child == self.threads:
                continue
            ChildCgroupV1(child, None).kill_all(timeout_s=1.0)
            remove_dir(child)
        for group in dict.fromkeys(g for g in (self.cpu, self.cpuacct) if g is not None):
            ChildCgroupV1(group, None).kill_all(timeout_s=1.0)  # normally empty: the children are reaped first
            remove_dir(group)


class CgroupV1:
    """Factory of slot and child groups; ``detect()`` returns None where cgroup v1 memory is not writable (not root)."""

    version = "v1"

    def __init__(self, memory: Path, pids: Path | None, cpu: Path | None = None, cpuacct: Path | None = None) -> None:
        self.memory_parent, self.pids_parent = memory, pids
        self.cpu_parent, self.cpuacct_parent = cpu, cpuacct

    @classmethod
    def detect(cls) -> CgroupV1 | None:
        memory = own_v1_group("memory")
        if memory is None or not (memory / "memory.limit_in_bytes").exists():
            return None
        cpu, cpuacct = own_v1_group("cpu"), own_v1_group("cpuacct")
        cpu = cpu.resolve() if cpu is not None and (cpu / "cpu.shares").exists() else None
        cpuacct = cpuacct.resolve() if cpuacct is not None and (cpuacct / "cpuacct.usage").exists() else None
        return cls(memory, own_v1_group("pids"), cpu, cpuacct)

    @property
    def controllers(self) -> dict[str, str | None]:
        """Each controller the sandbox uses and the parent group it creates groups under (None: not available)."""
        found = {"memory": self.memory_parent, "pids": self.pids_parent, "cpu": self.cpu_parent}
        found["cpuacct"] = self.cpuacct_parent
        return {name: str(path) if path is not None else None for name, path in found.items()}

    def _parents(self) -> list[Path]:
        found = (self.memory_parent, self.pids_parent, self.cpu_parent, self.cpuacct_parent)
        return list(dict.fromkeys(p for p in found if p is not None))

    def sweep_stale(self) -> int:
        """Remove groups left by a grader process that died (kill -9, OOM) before cleaning up; their members die too.

        Returns:
            How many groups were removed.
        """
        removed = 0
        for parent in self._parents():
            for group in parent.glob("autograder-*-*"):
                if not owner_is_dead(group.name):
                    continue
                for stale in [*sorted(group.glob("autograder-*-*")), group]:  # a slot's children's groups first
                    ChildCgroupV1(stale, None).kill_all(timeout_s=1.0)
                    ChildCgroupV1(stale, None).remove()
                removed += not group.exists()
        return removed

    def slot(self) -> SlotCgroupV1:
        """A new slot's cpu (and cpuacct) group with the slot's CPU share; its children's groups come from it."""
        name = f"autograder-{os.getpid()}-{fresh_name('s')}"
        cpu = cpuacct = None
        try:
            if self.cpu_parent is not None:
                cpu = self.cpu_parent / name
                cpu.mkdir()
                # One nice-0 task's weight for the whole slot, however many processes it starts, and at most one
                # core: the period is written first (a quota is checked against the period it is written under).
                (cpu / "cpu.shares").write_text(str(SLOT_CPU_SHARES))
                with contextlib.suppress(FileNotFoundError):  # absent without CONFIG_CFS_BANDWIDTH
                    (cpu / "cpu.cfs_period_us").write_text(str(SLOT_CPU_PERIOD_US))
                    (cpu / "cpu.cfs_quota_us").write_text(str(SLOT_CPU_QUOTA_US))
            if self.cpuacct_parent is not None:
                if self.cpuacct_parent == self.cpu_parent:  # mounted together ("cpu,cpuacct"): one group
                    cpuacct = cpu
                else:
                    cpuacct = self.cpuacct_parent / name
                    cpuacct.mkdir()
        except BaseException:
            for group in (cpu, cpuacct):
                if group is not None:
                    remove_dir(group)
            raise
        return SlotCgroupV1(self, cpu, cpuacct)

    def create(self, memory_bytes: int, pids_max: int) -> ChildCgroupV1:
        """A child's groups outside any slot (no CPU share)."""
        return self.create_child(memory_bytes, pids_max, ())

    def create_child(
        self, memory_bytes: int, pids_max: int, joined: tuple[Path, ...], cpuacct_parent: Path | None = None
    ) -> ChildCgroupV1:
        name = f"autograder-{os.getpid()}-{fresh_name()}"
        memory = self.memory_parent / name
        memory.mkdir()
        pids = cpuacct = None
        try:
            if cpuacct_parent is not None:
                cpuacct = cpuacct_parent / name
                cpuacct.mkdir()
            (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
            with contextlib.suppress(OSError):  # absent without swap accounting
                (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
            if self.pids_parent is not None:
                pids = self.pids_parent / name
                pids.mkdir()
                (pids / "pids.max").write_text(str(pids_max))
        except BaseException:
            ChildCgroupV1(memory, pids, (), cpuacct).remove()
            raise
        return ChildCgroupV1(memory, pids, joined, cpuacct)


def _cpuacct_usage_usec(group: Path | None) -> int | None:
    """A cpuacct group's CPU time so far in microseconds (None without a group, or once it is gone)."""
    if group is None:
        return None
    with contextlib.suppress(OSError, ValueError):
        return int((group / "cpuacct.usage").read_text()) // 1000
    return None
