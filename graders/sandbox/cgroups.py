"""Per-child cgroup v1 groups (memory and pids) created under the trusted process's own groups.

The PARENT writes the child's pid (0.3 ms; a child moving itself costs ~9 ms). The groups also give the cleanup a
complete list of the run's processes, double-forked daemons included.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from pathlib import Path

from graders.sandbox import procfs

V1_ROOT = Path("/sys/fs/cgroup")
_counter = itertools.count()


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


class ChildCgroup:
    def __init__(self, memory: Path, pids: Path | None) -> None:
        self.memory, self.pids = memory, pids

    def add(self, pid: int) -> None:
        for group in (self.memory, self.pids):
            if group is not None:
                (group / "cgroup.procs").write_text(str(pid))

    def lower(self, memory_bytes: int, pids_max: int) -> None:
        """Lower the limits of a pre-forked child's groups to a submission's (a write each; no migration).

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
                with contextlib.suppress(OSError, ValueError):
                    found |= {int(x) for x in (group / "cgroup.procs").read_text().split()}
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

    def remove(self) -> None:
        for group in (self.memory, self.pids):
            if group is None:
                continue
            for _ in range(50):
                try:
                    group.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)


class CgroupV1:
    """Factory of child groups; ``detect()`` returns None where cgroup v1 memory is not writable (not root)."""

    def __init__(self, memory: Path, pids: Path | None) -> None:
        self.memory_parent, self.pids_parent = memory, pids

    @classmethod
    def detect(cls) -> CgroupV1 | None:
        memory = own_v1_group("memory")
        if memory is None or not (memory / "memory.limit_in_bytes").exists():
            return None
        return cls(memory, own_v1_group("pids"))

    def sweep_stale(self) -> int:
        """Remove groups left by a grader process that died (kill -9, OOM) before cleaning up; their members die too.

        Returns:
            How many groups were removed.
        """
        removed = 0
        for parent in (self.memory_parent, self.pids_parent):
            if parent is None:
                continue
            for group in parent.glob("autograder-*-*"):
                owner = group.name.split("-")[1]
                if not owner.isdigit() or procfs.pid_alive(int(owner)):
                    continue
                stale = ChildCgroup(group, None)
                stale.kill_all(timeout_s=1.0)
                stale.remove()
                removed += not group.exists()
        return removed

    def create(self, memory_bytes: int, pids_max: int) -> ChildCgroup:
        name = f"autograder-{os.getpid()}-{next(_counter)}"
        memory = self.memory_parent / name
        memory.mkdir()
        (memory / "memory.limit_in_bytes").write_text(str(memory_bytes))
        with contextlib.suppress(OSError):  # absent without swap accounting
            (memory / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        pids = None
        if self.pids_parent is not None:
            pids = self.pids_parent / name
            pids.mkdir()
            (pids / "pids.max").write_text(str(pids_max))
        return ChildCgroup(memory, pids)
