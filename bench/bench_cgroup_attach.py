"""What a slot's CPU share adds to putting a child in its cgroups (the trusted side's write in ``Slot.spawn``).

Baseline, measured in the same run: cgroup v1 as before the CPU share, a memory and a pids group per child (two
writes). Then: the same plus the slot's cpu and cpuacct groups (four writes), and, where a writable cgroup v2
hierarchy exists, one write into a v2 leaf under a slot group (with whatever controllers v2 offers here). Each round
creates the child's groups, moves one sleeping process in, and removes the groups again; only the move is timed.
Needs root; a level this host lacks is skipped with a line saying so.

    .venv/bin/python -m bench.bench_cgroup_attach [--n 300]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from graders.sandbox import cgroup_v2
from graders.sandbox.cgroup_common import ChildCgroup
from graders.sandbox.cgroup_v1 import CgroupV1
from graders.sandbox.cgroup_v2 import CgroupV2


def _time_adds(make: Callable[[], ChildCgroup], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        proc = subprocess.Popen([sys.executable, "-S", "-c", "import time; time.sleep(30)"])
        group = make()
        try:
            start = time.perf_counter()
            group.add(proc.pid)
            samples.append((time.perf_counter() - start) * 1000)
        finally:
            proc.kill()
            proc.wait()
            group.kill_all(timeout_s=5)
            group.remove()
    return samples


def _line(name: str, samples: list[float]) -> str:
    q = statistics.quantiles(samples, n=20)
    return f"{name:<44} median {statistics.median(samples):6.3f} ms  p95 {q[18]:6.3f} ms  max {max(samples):6.3f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=300)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (cgroups are created and written)")
        return
    v1 = CgroupV1.detect()
    if v1 is None:
        print("cgroup v1 memory is not writable here: no baseline")
    else:
        print(_line("baseline: v1 memory + pids (before)", _time_adds(lambda: v1.create(64 << 20, 32), args.n)))
        slot = v1.slot()
        try:
            label = "v1 memory + pids + slot cpu/cpuacct (now)"
            print(_line(label, _time_adds(lambda: slot.create(64 << 20, 32), args.n)))
        finally:
            slot.remove()
    probe = CgroupV2.detect(required=())
    if probe is None:
        print("no writable cgroup v2 hierarchy here")
        return
    v2 = CgroupV2(probe.own, tuple(sorted(cgroup_v2.controllers_of(probe.own))), required=())
    slot2 = v2.slot()
    try:
        label = f"v2 leaf under a slot ({' '.join(sorted(v2.enabled())) or 'no controller'})"
        print(_line(label, _time_adds(lambda: slot2.create(64 << 20, 32), args.n)))
    finally:
        slot2.remove()


if __name__ == "__main__":
    main()
