"""Where the time of one sandboxed child goes, stage by stage: fork, lockdown, arm, load, calls, kill, reap.

Run: ``.venv/bin/python -m bench.profile_sandbox [--runs 30] [--mode bwrap|unsafe-local]``

Part 1 forks each child on demand (what the pool's housekeeper does in the background) and splits its life into
stages, from the trusted side's clock and from the monotonic stamps the zygote and the child report (one clock: the
jail has no time namespace). Part 2 is the critical path a submission pays with the pool: take a waiting child,
arm it, load, one call, release; once with the pool settled before each run (an idle grader) and once back to back.
Medians in ms. docs/sandbox.md, "Measured numbers", records a run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from typing import Any

import torch

from graders.sandbox import codec
from graders.sandbox.config import RunLimits, SandboxConfig
from graders.sandbox.pool import SlotPool
from graders.sandbox.slot import STUDENT, Slot

SOURCE = b"import torch\ndef f(q):\n    return torch.softmax(q @ q.transpose(-2, -1) / 4, -1) @ q\n"
LIMITS = RunLimits()


def stamps(pairs: list[Any]) -> dict[str, float]:
    return {str(name): float(t) for name, t in pairs}


def call_args() -> tuple[dict[str, Any], list[Any]]:
    tree, buffers = codec.encode_value(((torch.randn(2, 4, 8, 16, dtype=torch.float64),), {}), codec.Caps())
    return {"op": "call", "name": "f", "args": tree["v"][0], "kwargs": tree["v"][1]}, buffers


def fresh_child(slot: Slot, stages: dict[str, list[float]]) -> None:
    """One child forked on demand, every stage timed."""
    zygote = slot.ensure_zygote()
    seat = slot.seats[STUDENT][0]
    call, buffers = call_args()
    t0 = time.monotonic()
    process = slot.fork(zygote, LIMITS, seat)
    t_forked = time.monotonic()
    z = stamps(process.spawn_stamps)
    slot.arm(process, LIMITS, seat)
    t_armed = time.monotonic()
    c = stamps(process.ready_stamps)
    process.request({"op": "load"}, [SOURCE], 10)
    t_loaded = time.monotonic()
    process.request(call, buffers, 10)
    t_called = time.monotonic()
    process.stop()
    t_stopped = time.monotonic()
    process.finish()
    t_finished = time.monotonic()

    def add(name: str, start: float, end: float) -> None:
        stages[name].append((end - start) * 1000)

    add("control message to the zygote", t0, z["start"])
    add("zygote: wipe the old working dir", z["start"], z["wipe"])
    add("zygote: mkdir + mount the tmpfs", z["wipe"], z["tmpfs"])
    if "fork" in z:  # sandboxed: a pid namespace of its own
        pidns = "pidns" if "pidns" in z else "pidns_ready"
        add(f"zygote: pid namespace + init ({'inline' if pidns == 'pidns' else 'made ahead'})", z["tmpfs"], z[pidns])
        add("zygote: fork", z[pidns], z["fork"])
        add("zygote: wait for the init", z["fork"], z["forked"])
        add("child: fork until its first line", z[pidns], c["start"])
    else:
        add("zygote: fork", z["tmpfs"], z["forked"])
        add("child: fork until its first line", z["tmpfs"], c["start"])
    add("reply + host pid lookup (trusted)", z["forked"], t_forked)
    previous = "start"
    for step in ("setsid", "fds", "namespaces", "rlimits", "uid", "no_new_privs", "seccomp"):
        if step in c:
            add(f"child: {step}", c[previous], c[step])
            previous = step
    add("child: locked down, from its first line", c["start"], c[previous])
    add("arm: cgroup + go + limits (trusted, wall)", t_forked, t_armed)
    add("child: go -> workdir -> hide modules", c["go"], c["hidden"])
    add("load the source (round trip)", t_armed, t_loaded)
    add("one call (round trip)", t_loaded, t_called)
    add("stop (SIGKILL, trusted)", t_called, t_stopped)
    add("finish: reap + wipe + cgroup removal", t_stopped, t_finished)
    add("TOTAL fork -> finished", t0, t_finished)
    add("TOTAL on the critical path without a pool", t0, t_stopped)


def pooled(slot: Slot, stages: dict[str, list[float]], *, settle: bool) -> None:
    """What a submission pays with the pool: take, arm, load, one call, release."""
    call, buffers = call_args()
    if settle:
        slot.settle()
    t0 = time.monotonic()
    process = slot.spawn(LIMITS, STUDENT)  # take + arm
    t1 = time.monotonic()
    process.request({"op": "load"}, [SOURCE], 10)
    t2 = time.monotonic()
    process.request(call, buffers, 10)
    t3 = time.monotonic()
    slot.release(process)
    t4 = time.monotonic()
    label = "settled" if settle else "back to back"
    for name, start, end in (("take + arm", t0, t1), ("load", t1, t2), ("call", t2, t3), ("release", t3, t4)):
        stages[f"{label}: {name}"].append((end - start) * 1000)
    stages[f"{label}: TOTAL"].append((t4 - t0) * 1000)


def report(title: str, stages: dict[str, list[float]]) -> None:
    print(f"\n{title} (median ms, p90 ms, n)")
    for name, values in stages.items():
        ordered = sorted(values)
        p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
        print(f"  {name:<52} {statistics.median(values):8.2f} {p90:8.2f} {len(values):4d}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--mode", choices=["bwrap", "unsafe-local"], default="bwrap")
    args = parser.parse_args()
    unsafe = args.mode == "unsafe-local"

    on_demand = SlotPool(SandboxConfig(mode=args.mode, dev_mode=unsafe, prefork=0))
    try:
        stages: dict[str, list[float]] = defaultdict(list)
        with on_demand.borrow() as slot:
            for i in range(args.runs + 3):
                fresh_child(slot, stages if i >= 3 else defaultdict(list))
    finally:
        on_demand.close()
    report(f"Part 1: one child forked on demand ({args.mode})", stages)

    with_pool = SlotPool(SandboxConfig(mode=args.mode, dev_mode=unsafe))
    try:
        stages = defaultdict(list)
        with with_pool.borrow() as slot:
            for settle in (True, False):
                for i in range(args.runs + 3):
                    pooled(slot, stages if i >= 3 else defaultdict(list), settle=settle)
    finally:
        with_pool.close()
    report(f"Part 2: a submission's child from the pool ({args.mode})", stages)


if __name__ == "__main__":
    main()
