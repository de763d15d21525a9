"""What the cgroup v1 and v2 modules share: the interface the slots use, the CPU share of a slot, and cleanup helpers.

A slot asks its ``SlotCgroups`` for one ``ChildCgroup`` per child; the trusted side writes the child's host pid into
it before the child runs any student code (``Slot.spawn``), kills and removes it after the run
(``StudentProcess.finish``). Which version backs them is chosen once per pool (``cgroups.detect``).
"""

from __future__ import annotations

import secrets
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from graders.sandbox import procfs

# A slot's CPU share, whatever the number of its processes: the weight of one ordinary (nice 0) task in v1
# (cpu.shares 1024) and the default weight in v2 (cpu.weight 100), so a slot counts as one task against the server
# and against every other slot; and at most one core (a quota of one period), which a single-threaded grading never
# reaches, so that 32 busy threads of one submission cannot take the other cores from the other slots' timings.
SLOT_CPU_SHARES = 1024
SLOT_CPU_WEIGHT = 100
SLOT_CPU_PERIOD_US = 100_000
SLOT_CPU_QUOTA_US = 100_000
NAME_TOKEN_BYTES = 8


def fresh_name(prefix: str = "") -> str:
    """A group's own name part, drawn at random: no counter that a child reads in /proc/self/cgroup.

    A child sees its groups' full paths; a name numbered in creation order told it how many children the grader
    had made before it (and so whether the submissions before it made more children than usual).
    """
    return prefix + secrets.token_hex(NAME_TOKEN_BYTES)


class ChildCgroup(Protocol):
    """One child's groups: every process it starts is in them, and nothing else is."""

    version: str

    def add(self, pid: int) -> None: ...
    def lower(self, memory_bytes: int, pids_max: int) -> None: ...
    def procs(self) -> list[int]: ...
    def signal_all(self) -> None: ...
    def kill_all(self, timeout_s: float = 5.0) -> bool: ...
    def oom_killed(self) -> bool: ...
    def cpu_usage_usec(self) -> int | None: ...
    def remove(self) -> None: ...


class TrustedCgroup(Protocol):
    """The trusted side's group within a slot (its set's checker, which runs the functions of reverse calls): in
    the slot's CPU share, so that what a submission makes the grader compute is capped with the submission."""

    def add(self, pid: int) -> None: ...
    def cpu_usage_usec(self) -> int | None: ...
    def remove(self) -> None: ...


class SlotCgroups(Protocol):
    """One slot's groups: its CPU share, and the factory of its children's groups and of its trusted group."""

    version: str

    def create(self, memory_bytes: int, pids_max: int) -> ChildCgroup: ...
    def trusted(self) -> TrustedCgroup | None: ...
    def this_thread(self) -> AbstractContextManager[None]: ...
    def cpu_settings(self) -> dict[str, str]: ...
    def cpu_usage_usec(self) -> int | None: ...
    def remove(self) -> None: ...


class Hierarchy(Protocol):
    """cgroup v1 or v2 as the sandbox uses it on this host."""

    version: str

    @property
    def controllers(self) -> dict[str, str | None]: ...
    def sweep_stale(self) -> int: ...
    def slot(self) -> SlotCgroups: ...


def owner_is_dead(name: str) -> bool:
    """Whether a group named ``autograder-<pid>-...`` or ``autograder-<pid>`` belongs to a process that is gone."""
    parts = name.split("-")
    return len(parts) >= 2 and parts[0] == "autograder" and parts[1].isdigit() and not procfs.pid_alive(int(parts[1]))


def remove_dir(group: Path, attempts: int = 50) -> None:
    """rmdir a group, retrying while its last members are still exiting (EBUSY for a few ms after SIGKILL)."""
    for _ in range(attempts):
        try:
            group.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)
    # Still busy after ~0.5 s: left for the next pool's sweep (its owner, this process, will be dead by then).
