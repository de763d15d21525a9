"""What a slot's CPU share buys: another slot's fixed piece of work beside a many-process CPU hog.

Slot A runs ``--hogs`` busy processes; slot B runs one process doing a fixed amount of work (a counted loop) and
reports its wall time. Baseline, measured in the same run: the same processes in no slot group (as before the CPU
share: the kernel's fairness alone, one share per process). Then with each slot in its own group from the
hierarchy the pool would use here (``cgroups.detect``: one task's weight and at most one core per slot). Also
printed: the work alone, with nothing beside it. Needs root. It burns every core for a few seconds.

    .venv/bin/python -m bench.bench_slot_cpu_share [--hogs 8] [--loops 3000000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from graders.sandbox import cgroups
from graders.sandbox.cgroup_common import SlotCgroups

HOG = "while True: pass"
WORK = "import sys, time\nsys.stdin.readline()\nt = time.perf_counter()\nfor _ in range({loops}): pass\n"
WORK += "print(time.perf_counter() - t, flush=True)\n"


def _round(loops: int, hogs: int, slots: tuple[SlotCgroups, SlotCgroups] | None) -> float:
    children = []
    groups = [slots[0].create(512 << 20, 64), slots[1].create(512 << 20, 64)] if slots else []
    try:
        for _ in range(hogs):
            children.append(subprocess.Popen([sys.executable, "-S", "-c", HOG]))
            if groups:
                groups[0].add(children[-1].pid)
        work = subprocess.Popen(
            [sys.executable, "-S", "-c", WORK.format(loops=loops)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        children.append(work)
        if groups:
            groups[1].add(work.pid)
        time.sleep(0.3)  # the hogs are running
        out, _ = work.communicate(b"go\n", timeout=600)
        return float(out)
    finally:
        for child in children:
            child.kill()
            child.wait()
        for group in groups:
            group.kill_all()
            group.remove()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hogs", type=int, default=8)
    parser.add_argument("--loops", type=int, default=3_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("needs root (cgroups are created and written)")
        return
    hierarchy = cgroups.detect()
    if hierarchy is None:
        print("no cgroup here (threads-only): no CPU share to measure")
        return
    pair = (hierarchy.slot(), hierarchy.slot())
    if not pair[0].cpu_settings():
        print(f"{cgroups.level(hierarchy)} here has no cpu controller: no CPU share to measure")
    try:
        alone = [_round(args.loops, 0, None) for _ in range(args.rounds)]
        before = [_round(args.loops, args.hogs, None) for _ in range(args.rounds)]
        after = [_round(args.loops, args.hogs, pair) for _ in range(args.rounds)]
    finally:
        for slot in pair:
            slot.remove()
    print(f"level {cgroups.level(hierarchy)}, {os.cpu_count()} cores, {args.hogs} hog processes in slot A")
    print(f"slot B's work alone                        median {statistics.median(alone):6.3f} s  {alone}")
    print(f"baseline: beside the hog, no slot groups   median {statistics.median(before):6.3f} s  {before}")
    print(f"beside the hog, each slot its CPU share    median {statistics.median(after):6.3f} s  {after}")


if __name__ == "__main__":
    main()
