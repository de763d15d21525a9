"""Groups left by a grader that died are removed, with their processes, when the next pool starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from graders.sandbox.cgroups import CgroupV1


def test_stale_group_of_a_dead_grader_is_swept() -> None:
    cgroups = CgroupV1.detect()
    if cgroups is None:
        if os.environ.get("AUTOGRADER_TEST_REQUIRE_SERVICES") == "1":
            pytest.fail("cgroup v1 memory controller not writable (required in CI)")
        pytest.skip("cgroup v1 memory controller not writable here")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead_pid = int(dead.stdout)  # this process has exited: its pid names a dead grader
    stale = cgroups.memory_parent / f"autograder-{dead_pid}-0"
    stale.mkdir()
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    (stale / "cgroup.procs").write_text(str(orphan.pid))
    mine = cgroups.create(64 << 20, 16)  # a live grader's group (this process) must survive
    try:
        assert cgroups.sweep_stale() >= 1
        assert not stale.exists()
        assert orphan.wait(timeout=10) != 0  # killed with its group
        assert mine.memory.exists()
    finally:
        mine.remove()
        if orphan.poll() is None:
            orphan.kill()
