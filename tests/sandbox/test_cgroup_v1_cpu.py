"""cgroup v1: each child's CPU time is its own (a timed call's work), forks included, and the slot's holds them all."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from graders.sandbox.cgroups import CgroupV1

# Waits for a line on stdin, then burns 0.2 s of CPU in a forked child (waited for) and exits.
BURN_IN_A_FORK = """
import os, sys, time
sys.stdin.readline()
if os.fork() == 0:
    end = time.process_time() + 0.2
    while time.process_time() < end:
        pass
    os._exit(0)
os.wait()
"""


def test_a_childs_cpu_time_counts_its_forks_and_nothing_of_the_other_children_of_its_slot() -> None:
    cgroups = CgroupV1.detect()
    if cgroups is None or cgroups.cpuacct_parent is None:
        if os.environ.get("AUTOGRADER_TEST_REQUIRE_SERVICES") == "1":
            pytest.fail("cgroup v1 memory and cpuacct not writable (required in CI)")
        pytest.skip("cgroup v1 memory and cpuacct not writable here")
    slot = cgroups.slot()
    timed, beside = slot.create(256 << 20, 64), slot.create(256 << 20, 64)
    try:
        assert timed.cpu_usage_usec() == 0 and beside.cpu_usage_usec() == 0
        worker = subprocess.Popen([sys.executable, "-c", BURN_IN_A_FORK], stdin=subprocess.PIPE, text=True)
        beside.add(worker.pid)  # a spare's lockdown, another check's child: work that is not the timed call's
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
        assert worker.wait(timeout=60) == 0
        assert timed.cpu_usage_usec() == 0
        assert (beside.cpu_usage_usec() or 0) >= 200_000  # the fork's work, reaped, is still the child's
        assert (slot.cpu_usage_usec() or 0) >= 200_000  # and the slot's
    finally:
        timed.remove()
        beside.remove()
        slot.remove()
    assert not (timed.cpuacct and timed.cpuacct.exists()) and not (slot.cpuacct and slot.cpuacct.exists())
