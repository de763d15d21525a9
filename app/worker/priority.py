"""`autograder worker` at a lower CPU priority than the API, when the operator asks (``AUTOGRADER_WORKER_NICE``).

A login waits on CPU (argon2, app.users.password_checks) and so does every request; a grading can wait a few
seconds more. On a host of its own (the API, PostgreSQL and the workers on the same cores), a worker at the API's
priority takes an equal share of them whenever it is busy; niced, it takes what the API leaves.

Not the default (0), because a niced worker yields to everything else on the host too: beside other tenants' work
(a shared 2-core machine at load 10-17, `bench.bench_class_load --modes celery`) two workers at nice 10 graded a
fill-in answer in 67 s at p50 against 0.09 s at nice 0.

Two knobs, because Linux has two levels of CPU shares:

- the process's nice value (``os.nice``), inherited by every thread and child the worker starts (the sandbox's
  zygote and gradings too). It weighs a thread against the others of its scheduling group only.
- the scheduling group. With the kernel's autogroups on (``/proc/sys/kernel/sched_autogroup_enabled``, the default
  of most distributions, and in force wherever the cpu cgroup controller does not place the process), each session
  is a group and groups share the CPU equally whatever their threads' nice values: `serve` and `worker` started as
  two services (or by ``setsid``) get one share each, and ``nice`` alone changes nothing between them. So a worker
  that leads its own session also lowers its autogroup's nice (``/proc/self/autogroup``). One that does not (started
  from a shell beside `serve`) shares its group with that shell's other processes, the API perhaps, and leaves the
  group alone: there its own nice value is what counts. (The sandbox's children start sessions of their own, so
  under autogroups only their nice value is lowered.)

Lowering a priority needs no privilege and cannot be undone by the process itself. Under systemd with the cpu
controller, or in containers, the services' ``CPUWeight=`` / ``cpu_shares`` weigh their cgroups instead.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

AUTOGROUP_SWITCH = Path("/proc/sys/kernel/sched_autogroup_enabled")
OWN_AUTOGROUP = Path("/proc/self/autogroup")


@dataclass(frozen=True)
class Lowered:
    """What lower_priority did: the process's nice value after it, and the autogroup's (None: left alone)."""

    nice: int
    autogroup_nice: int | None


def lower_priority(nice: int, *, switch: Path = AUTOGROUP_SWITCH, own: Path = OWN_AUTOGROUP) -> Lowered:
    """Run this process (and what it starts from now on) at least ``nice`` (0-19); never raises its priority."""
    current = os.getpriority(os.PRIO_PROCESS, 0)
    if nice <= current:  # already as low (a Nice= of the service, or `nice autograder worker`): kept
        return Lowered(current, None)
    os.nice(nice - current)
    return Lowered(nice, _lower_autogroup(nice, switch, own))


def _lower_autogroup(nice: int, switch: Path, own: Path) -> int | None:
    if os.getsid(0) != os.getpid():  # not our session's group alone: the shell's, perhaps serve's too
        return None
    try:
        if switch.read_text().strip() != "1":
            return None
        # "/autogroup-25 nice 0"; the group is ours alone (this process started the session), so lowering it
        # touches nothing else.
        group_nice = int(own.read_text().split()[-1])
        if group_nice >= nice:
            return group_nice
        for _ in range(5):
            try:
                own.write_text(f"{nice}\n")
                return nice
            except BlockingIOError:  # the kernel takes one such change a tenth of a second, from any process
                time.sleep(0.11)
        raise BlockingIOError("the kernel refused the autogroup change five times (EAGAIN)")
    except (OSError, ValueError, IndexError) as exc:  # no autogroups in this kernel, or /proc read-only
        log.info("worker priority: the autogroup's nice value left as it is (%s)", exc)
        return None
