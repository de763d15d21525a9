"""Process facts on the trusted side: whether a pid exists, and (from /proc) a jail pid's host pid and state."""

from __future__ import annotations

import os
import time


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (one owned by another user counts: we may not signal it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def children(pid: int) -> list[int]:
    """Children of every thread of ``pid`` (empty when it is gone)."""
    found: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as fh:
                found += [int(x) for x in fh.read().split()]
        except OSError:
            continue
    return found


def ns_pids(pid: int) -> list[int]:
    """The NSpid line: the pid as seen from the host's namespace first, the innermost last."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("NSpid:"):
                    return [int(x) for x in line.split()[1:]]
    except OSError:
        pass
    return []


def find_descendant(root: int, inner_pid: int, max_depth: int = 4) -> int | None:
    """The host pid of the descendant of ``root`` whose innermost pid is ``inner_pid``."""
    frontier = [root]
    for _ in range(max_depth):
        frontier = [c for p in frontier for c in children(p)]
        for pid in frontier:
            nspid = ns_pids(pid)
            if len(nspid) > 1 and nspid[-1] == inner_pid:
                return pid
    return None


def pids_of_uid(uid: int) -> list[int]:
    """Every host process whose real uid is ``uid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as fh:
                for line in fh:
                    if line.startswith("Uid:"):
                        if int(line.split()[1]) == uid:
                            found.append(int(entry))
                        break
        except (OSError, ValueError):
            continue
    return found


def state(pid: int) -> str | None:
    """The one-letter state from /proc/PID/stat ("T" stopped, "Z" zombie, ...), None when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            text = fh.read()
    except OSError:
        return None
    after = text.rfind(")")  # the command name may hold spaces and parentheses
    fields = text[after + 1 :].split()
    return fields[0] if after > 0 and fields else None


def process_cpu_seconds(pid: int) -> float | None:
    """The CPU time of every thread of ``pid`` (exited ones included), in seconds; None when it cannot be read.

    Read through the process's CPU clock (``clock_gettime`` on the id ``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``
    of the kernel's posix-cpu-timers): nanoseconds of scheduler time, where ``/proc/PID/stat`` counts 10 ms ticks.
    Any process may read another's; the pid is the host's, as this process sees it.
    """
    if pid <= 0:
        return None
    clock = (~pid << 3) | 2  # CPUCLOCK_SCHED, per process (not per thread: bit 2 clear)
    try:
        return time.clock_gettime(clock)
    except OSError:
        return None


def tree(root: int, max_depth: int = 4) -> list[int]:
    """``root`` and its descendants, as they are now."""
    found, frontier = [root], [root]
    for _ in range(max_depth):
        frontier = [c for p in frontier for c in children(p)]
        found += frontier
    return found


def cpu_seconds(pids: list[int]) -> float | None:
    """The CPU time of these processes together (``process_cpu_seconds``); None when none can be read."""
    readings = [process_cpu_seconds(pid) for pid in pids]
    found = [r for r in readings if r is not None]
    return sum(found) if found else None
