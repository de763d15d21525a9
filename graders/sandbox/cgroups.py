"""Which cgroups hold the children on this host: v2 (a delegated subtree), v1 (per-controller groups) or none.

``detect`` picks, once per pool: cgroup v2 where this process's own v2 group is writable and offers memory and
pids; else cgroup v1 where the memory controller is writable; else None, and the children are bounded by rlimits
and refused new processes by seccomp (threads only: ``seccomp_filter.build_filter(threads_only=True)``). The pool
asks the hierarchy for one ``SlotCgroups`` per slot (its CPU share) and the slot asks that for one ``ChildCgroup``
per child (``cgroup_common`` has the interface; ``cgroup_v1`` and ``cgroup_v2`` the two implementations).
"""

from __future__ import annotations

from graders.sandbox.cgroup_common import ChildCgroup, Hierarchy, SlotCgroups, TrustedCgroup
from graders.sandbox.cgroup_v1 import CgroupV1, own_v1_group
from graders.sandbox.cgroup_v2 import CgroupV2

THREADS_ONLY = "threads-only"


def detect() -> Hierarchy | None:
    """cgroup v2 if it offers memory and pids here, else v1 if its memory controller is writable, else None."""
    return CgroupV2.detect() or CgroupV1.detect()


def level(hierarchy: Hierarchy | None) -> str:
    """The isolation level, as ``autograder doctor`` and the docs name it: "cgroup v2", "cgroup v1", "threads-only"."""
    return f"cgroup {hierarchy.version}" if hierarchy is not None else THREADS_ONLY


__all__ = ["THREADS_ONLY", "CgroupV1", "CgroupV2", "ChildCgroup", "Hierarchy", "SlotCgroups", "detect", "level"]
__all__ += ["TrustedCgroup", "own_v1_group"]
