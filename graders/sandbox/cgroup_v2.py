"""cgroup v2: a delegated subtree under the trusted process's own group, one group per slot and one per child.

    <own group>/                          controllers enabled for the subtree (cgroup.subtree_control)
        autograder-trusted/               only where the own group held processes: they move here (see below)
        autograder-<pid>/                 this grader process's subtree; no process, controllers enabled below
            s<k>/                         one slot: cpu.weight, cpu.max; no process, memory and pids enabled below
                r<k>/                     one child: memory.max, memory.swap.max, memory.oom.group, pids.max

Only the leaves (r<k>) hold processes: v2's "no internal processes" rule lets a group either hold processes or
pass controllers to its children, not both (the root of the hierarchy is exempt). Where the trusted process's own
group is not the root and holds processes (a container's namespace root, a systemd service with ``Delegate=yes``),
enabling controllers in it fails with EBUSY; its processes are then moved into the leaf ``autograder-trusted`` first,
as container init scripts do (docker-in-docker's entrypoint, systemd's documented delegation model), and the own
group is taken to be that leaf's parent from then on.

The mount is /sys/fs/cgroup on a pure v2 host and /sys/fs/cgroup/unified on a hybrid one (v1 controllers mounted
beside an empty v2 hierarchy, whose controllers are then usually all bound to v1). ``CgroupV2.detect`` only reads:
it asks for a writable own group whose ``cgroup.controllers`` offers the required controllers (memory and pids);
nothing is created before the pool's first slot.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
import time
from pathlib import Path

from graders.sandbox.cgroup_common import (
    SLOT_CPU_PERIOD_US,
    SLOT_CPU_QUOTA_US,
    SLOT_CPU_WEIGHT,
    fresh_name,
    owner_is_dead,
    remove_dir,
)

MOUNTS = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))
REQUIRED = ("memory", "pids")
WANTED = ("memory", "pids", "cpu")
TRUSTED_LEAF = "autograder-trusted"
_root_lock = threading.Lock()  # the grader's subtree is shared by every pool of this process


def mount_points() -> list[Path]:
    """Every cgroup2 mount this process sees, the usual places first."""
    found: list[Path] = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            fields = left.split()
            if len(fields) > 4 and right.split()[:1] == ["cgroup2"]:
                found.append(Path(fields[4]))
    return sorted(found, key=lambda p: MOUNTS.index(p) if p in MOUNTS else len(MOUNTS))


def own_group(mount: Path) -> Path | None:
    """This process's group in the v2 hierarchy (``0::`` in /proc/self/cgroup); the parent of ``TRUSTED_LEAF``."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        if line.startswith("0::"):
            group = mount / line[3:].strip().lstrip("/")
            return group.parent if group.name == TRUSTED_LEAF else group
    return None


def controllers_of(group: Path, file: str = "cgroup.controllers") -> set[str]:
    with contextlib.suppress(OSError):
        return set((group / file).read_text().split())
    return set()


def _populated(group: Path) -> bool:
    with contextlib.suppress(OSError):
        for line in (group / "cgroup.events").read_text().splitlines():
            if line.startswith("populated "):
                return line.split()[1] != "0"
    return group.exists()


def _kill_tree(group: Path, timeout_s: float) -> bool:
    """SIGKILL every process in ``group`` and below until it is empty: ``cgroup.kill`` (Linux 5.14+) or one by one."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not _populated(group):
            return True
        _signal_tree(group)
        time.sleep(0.001)
    return not _populated(group)


def _signal_tree(group: Path) -> None:
    try:
        (group / "cgroup.kill").write_text("1")
        return
    except FileNotFoundError:
        pass
    except OSError:
        if not group.exists():
            return
    for below in [group, *(p for p in group.rglob("*") if p.is_dir())]:
        with contextlib.suppress(OSError, ValueError):
            for pid in (below / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)


def _remove_tree(group: Path) -> None:
    """rmdir a group and every group below it, deepest first (a v2 group with children cannot be removed)."""
    if not group.exists():
        return
    below = sorted((p for p in group.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
    for path in [*below, group]:
        remove_dir(path)


def _usage_usec(group: Path) -> int | None:
    """``usage_usec`` of a group's ``cpu.stat`` (present in every v2 group, the cpu controller enabled or not)."""
    with contextlib.suppress(OSError, ValueError):
        for line in (group / "cpu.stat").read_text().splitlines():
            if line.startswith("usage_usec "):
                return int(line.split()[1])
    return None


class ChildCgroupV2:
    """One child's leaf group: every process the child starts lands here (forks inherit the group)."""

    version = "v2"

    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def lower(self, memory_bytes: int, pids_max: int) -> None:
        """A pre-forked child's limits, from the pool's ceiling down to a submission's (a write each, no move)."""
        for name, value in (("memory.max", memory_bytes), ("pids.max", pids_max)):
            if (self.path / name).exists():  # absent where the controller is not enabled (create() wrote neither)
                (self.path / name).write_text(str(value))

    def procs(self) -> list[int]:
        with contextlib.suppress(OSError, ValueError):
            return sorted(int(x) for x in (self.path / "cgroup.procs").read_text().split())
        return []

    def signal_all(self) -> None:
        """SIGKILL every current member (one write to ``cgroup.kill``, which a fork cannot outrun), without waiting."""
        _signal_tree(self.path)

    def kill_all(self, timeout_s: float = 5.0) -> bool:
        return _kill_tree(self.path, timeout_s)

    def oom_killed(self) -> bool:
        """Whether the memory limit made the kernel kill in this group (``memory.events``)."""
        with contextlib.suppress(OSError, ValueError):
            for line in (self.path / "memory.events").read_text().splitlines():
                name, _, count = line.partition(" ")
                if name in ("oom", "oom_kill", "oom_group_kill") and int(count) > 0:
                    return True
        return False

    def cpu_usage_usec(self) -> int | None:
        """CPU time of every process that ran in this group, forks included (a timed call's work, read here)."""
        return _usage_usec(self.path)

    def remove(self) -> None:
        remove_dir(self.path)


class TrustedCgroupV2:
    """A trusted process's leaf inside its slot's group."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def add(self, pid: int) -> None:
        (self.path / "cgroup.procs").write_text(str(pid))

    def cpu_usage_usec(self) -> int | None:
        return _usage_usec(self.path)

    def remove(self) -> None:
        """After its processes are gone."""
        remove_dir(self.path)


class SlotCgroupV2:
    """One slot's group: its CPU share; its children's leaf groups are created under it."""

    version = "v2"

    def __init__(self, path: Path, enabled: frozenset[str]) -> None:
        self.path, self.enabled = path, enabled

    def create(self, memory_bytes: int, pids_max: int) -> ChildCgroupV2:
        group = self.path / fresh_name("r")
        group.mkdir()
        try:
            limits: list[tuple[str, str]] = []
            if "memory" in self.enabled:
                # RAM only: no swap (v1's memsw limit = the budget means the same), and an OOM kills the whole
                # group at once, so a forked helper cannot live on holding what its parent's death did not free.
                limits += [("memory.max", str(memory_bytes)), ("memory.swap.max", "0"), ("memory.oom.group", "1")]
            if "pids" in self.enabled:
                limits.append(("pids.max", str(pids_max)))
            for name, value in limits:
                try:
                    (group / name).write_text(value)
                except FileNotFoundError:
                    if name in ("memory.max", "pids.max"):
                        raise
                    # memory.swap.max is absent without swap accounting, memory.oom.group before Linux 4.19
        except BaseException:
            remove_dir(group)
            raise
        return ChildCgroupV2(group)

    def this_thread(self) -> contextlib.AbstractContextManager[None]:
        """Nothing: a thread of the service cannot leave the service's group in v2, where every thread of a process
        shares its (domain) group; only the checker, a process of its own, is in the slot's (``trusted``)."""
        return contextlib.nullcontext()

    def trusted(self) -> TrustedCgroupV2:
        """A leaf for a trusted process of this slot, under the slot's CPU share; no memory or pids limit (the
        checker has its own address-space limit and cannot fork)."""
        group = self.path / fresh_name("t")
        group.mkdir()
        return TrustedCgroupV2(group)

    def cpu_settings(self) -> dict[str, str]:
        return {n: (self.path / n).read_text().strip() for n in ("cpu.weight", "cpu.max") if (self.path / n).exists()}

    def cpu_usage_usec(self) -> int | None:
        """CPU time of every process that ran in this slot (``cpu.stat`` exists in every v2 group)."""
        return _usage_usec(self.path)

    def remove(self) -> None:
        _kill_tree(self.path, 1.0)  # normally empty already: every child is reaped before its slot closes
        _remove_tree(self.path)
        with _root_lock, contextlib.suppress(OSError):  # the grader's subtree goes with its last slot
            self.path.parent.rmdir()


class CgroupV2:
    """The delegated subtree of this grader process (created on the first ``slot()``)."""

    version = "v2"

    def __init__(self, own: Path, wanted: tuple[str, ...] = WANTED, required: tuple[str, ...] = REQUIRED) -> None:
        self.own = own
        self.root = own / f"autograder-{os.getpid()}"
        self.wanted, self.required = wanted, required

    @classmethod
    def detect(cls, required: tuple[str, ...] = REQUIRED, wanted: tuple[str, ...] = WANTED) -> CgroupV2 | None:
        """The subtree where the own group is writable and offers ``required``; None otherwise. Creates nothing.

        Args:
            required: controllers without which v2 is not used (the pool needs memory and pids).
            wanted: controllers enabled for the subtree where offered (tests pass what this host has).
        """
        for mount in mount_points():
            own = own_group(mount)
            if own is None:
                continue
            files = [own, own / "cgroup.procs", own / "cgroup.subtree_control"]
            if not all(p.exists() and os.access(p, os.W_OK) for p in files):
                continue
            if set(required) <= controllers_of(own):
                return cls(own, wanted, required)
        return None

    @property
    def controllers(self) -> dict[str, str | None]:
        """Each controller the sandbox uses and the group it is delegated from (None: not offered here)."""
        offered = controllers_of(self.own)
        return {name: str(self.own) if name in offered else None for name in WANTED}

    def enabled(self) -> frozenset[str]:
        """The wanted controllers this host offers, i.e. what ``slot()`` tries to enable for the subtree."""
        return frozenset(set(self.wanted) & controllers_of(self.own))

    def sweep_stale(self) -> int:
        """Remove the subtrees of grader processes that died before cleaning up; their processes die first.

        Returns:
            How many subtrees were removed.
        """
        removed = 0
        for group in self.own.glob("autograder-*"):
            if group.is_dir() and owner_is_dead(group.name):
                _kill_tree(group, 1.0)
                _remove_tree(group)
                removed += not group.exists()
        return removed

    def slot(self) -> SlotCgroupV2:
        with _root_lock:
            enabled = self._ensure_root(self.enabled())
            slot = self.root / fresh_name("s")
            slot.mkdir()
        try:
            if "cpu" in enabled:
                (slot / "cpu.weight").write_text(str(SLOT_CPU_WEIGHT))
                (slot / "cpu.max").write_text(f"{SLOT_CPU_QUOTA_US} {SLOT_CPU_PERIOD_US}")
            for name in sorted(enabled - {"cpu"}):  # the weight is the slot's; its children share it as they like
                _enable(slot, name)
        except BaseException:
            remove_dir(slot)
            raise
        return SlotCgroupV2(slot, enabled)

    def _ensure_root(self, wanted: frozenset[str]) -> frozenset[str]:
        """This process's subtree, with ``wanted`` passed down to it (the own group first); returns what is enabled.

        One controller per write: the kernel refuses a whole write for one controller it cannot enable (cpu, while a
        realtime process sits outside the root), and only the required ones (memory, pids) are worth failing for.
        """
        for name in sorted(wanted - controllers_of(self.own, "cgroup.subtree_control")):
            try:
                try:
                    _enable(self.own, name)
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        raise
                    self._move_processes_to_leaf()
                    _enable(self.own, name)
            except OSError:
                if name in self.required:
                    raise
        self.root.mkdir(exist_ok=True)
        for name in sorted(wanted & controllers_of(self.own, "cgroup.subtree_control")):
            if name not in controllers_of(self.root, "cgroup.subtree_control"):
                try:
                    _enable(self.root, name)
                except OSError:
                    if name in self.required:
                        raise
        return frozenset(wanted & controllers_of(self.root, "cgroup.subtree_control"))

    def _move_processes_to_leaf(self) -> None:
        """Empty the own group (the "no internal processes" rule) by moving its processes into ``TRUSTED_LEAF``."""
        leaf = self.own / TRUSTED_LEAF
        leaf.mkdir(exist_ok=True)
        for _ in range(10):  # a process forked meanwhile lands in the own group: repeat until it is empty
            pids = [int(x) for x in (self.own / "cgroup.procs").read_text().split()]
            if not pids:
                return
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    (leaf / "cgroup.procs").write_text(str(pid))


def _enable(group: Path, controller: str) -> None:
    (group / "cgroup.subtree_control").write_text(f"+{controller}")
