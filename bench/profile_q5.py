"""Where the time of one q5 grading goes: children, checks, timing, the checker.

Run: ``.venv/bin/python -m bench.profile_q5 [--runs 5] [--solution problems/attention/solutions/q5/masked_fill.py]``

Grades one q5 solution with the warm sandboxed CodeGrader, settled (the child pool full when a grading starts), and
times the pieces by wrapping them in this process (nothing in the jail is changed):

- children: taking a child from the slot's pool (``Slot.spawn``: a waiting pre-forked child, lowered to the
  problem's limits; or one forked on the spot) and killing it after its run (``Slot.release``; the reap and the
  wipe run in the pool's housekeeper, off the grading's path);
- loads: the ``load`` round trip that sends the source and runs the module (once per child, and once per hidden
  check in the child the hidden checks share);
- checks: each check's wall time as the grader reports it, split into the time the service waited on the set's
  jailed checker (the check's own code: drawing inputs, the float64 reference, comparing, encoding and decoding
  what crosses) and the time it spent answering the checker's calls (the round trips to the student's child);
- timing: the timing check, with its round trips to the student's and the reference's children, the work of the
  student's calls (CPU time of its child), and the stops and resumes of the student around each reference call;
- the in-process run of the same checks (no sandbox, one torch thread), for what the checks cost by themselves.

Every figure is the mean per grading over ``--runs`` gradings. Lines inside a check overlap its total (a round trip
to the child happens while the service answers the checker), so only the top-level lines add up to the grading.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import torch

from graders.code.checks import load_checks
from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set

SET_ROOT = Path(__file__).resolve().parents[1] / "problems" / "attention"


class Clock:
    """Seconds and counts per label, and the label of the check now running (for per-check splits)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.counts: dict[str, int] = defaultdict(int)
        self.check: str | None = None

    def add(self, label: str, seconds: float) -> None:
        self.seconds[label] += seconds
        self.counts[label] += 1
        if self.check is not None:
            self.seconds[f"{self.check}/{label}"] += seconds
            self.counts[f"{self.check}/{label}"] += 1

    def wrap(self, owner: Any, name: str, label: str | Callable[..., str]) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(label(*args, **kwargs) if callable(label) else label, time.perf_counter() - start)

        setattr(owner, name, timed)

    @contextmanager
    def checking(self, name: str) -> Iterator[None]:
        self.check = name
        try:
            yield
        finally:
            self.check = None


def instrument(clock: Clock) -> None:
    from graders.code import slot_grading
    from graders.code.checker import host
    from graders.sandbox import slot, student_process

    clock.wrap(slot.Slot, "spawn", lambda self, limits, role="student": f"child: take from the pool ({role})")
    clock.wrap(slot.Slot, "release", "child: kill after its run")
    clock.wrap(slot_grading, "_load", "load: send the source, run the module")
    clock.wrap(student_process.StudentProcess, "pause", "student: stop (SIGSTOP all)")
    clock.wrap(student_process.StudentProcess, "resume", "student: resume (SIGCONT all)")
    clock.wrap(student_process.StudentProcess, "cpu_seconds", "student: read its CPU clock")

    trip = lambda self, msg, *a, **k: f"child round trip: {msg.get('op')}"  # noqa: E731
    clock.wrap(student_process.StudentProcess, "request", trip)
    clock.wrap(host._Run, "execute", lambda self, frame: f"service answers checker: {frame.msg.get('m')}")
    clock.wrap(host._Pipes, "receive", "service waits on the checker")

    original_run_check = slot_grading.run_check

    def run_check(spec: Any, proxy: Any) -> Any:
        with clock.checking(spec.name):
            return original_run_check(spec, proxy)

    slot_grading.run_check = run_check  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--solution", type=Path, default=SET_ROOT / "solutions" / "q5" / "masked_fill.py")
    parser.add_argument("--mode", choices=["bwrap", "unsafe-local"], default="bwrap")
    args = parser.parse_args()

    from graders.code.runner import CodeGrader
    from graders.sandbox.config import SandboxConfig
    from tests.checklibs.attention.direct_proxy import DirectGrader

    problem = load_problem_set(SET_ROOT).spec.problem("q5")
    assert isinstance(problem, CodeProblem)
    source = args.solution.read_text(encoding="utf-8")
    torch.set_num_threads(1)

    checks = load_checks(SET_ROOT / problem.checks)
    direct = DirectGrader()
    direct.grade(source=source, problem=problem, checks=checks)
    base_walls, base_checks = [], defaultdict(list)
    for _ in range(args.runs):
        start = time.perf_counter()
        result = direct.grade(source=source, problem=problem, checks=checks)
        base_walls.append(time.perf_counter() - start)
        for c in result.checks:
            base_checks[c.name].append(c.duration_ms)

    clock = Clock()
    config = SandboxConfig(mode=args.mode, slots=1, dev_mode=args.mode == "unsafe-local")
    walls: list[float] = []
    per_check: dict[str, list[float]] = defaultdict(list)
    visibility: dict[str, str] = {}
    with CodeGrader(config) as grader:
        jailed = grader.checks(SET_ROOT, problem.checks)
        warm = grader.grade(source=source, problem=problem, checks=jailed)
        assert warm.score == warm.max_score, warm.to_dict()
        instrument(clock)
        for _ in range(args.runs):
            grader._pool.settle()  # not timed
            start = time.perf_counter()
            result = grader.grade(source=source, problem=problem, checks=jailed)
            walls.append(time.perf_counter() - start)
            assert result.score == result.max_score, result.to_dict()
            for c in result.checks:
                per_check[c.name].append(c.duration_ms)
                visibility[c.name] = c.visibility.value

    n = args.runs
    total = statistics.mean(walls) * 1e3

    def ms(label: str) -> float:
        return clock.seconds.get(label, 0.0) * 1e3 / n

    def count(label: str) -> float:
        return clock.counts.get(label, 0) / n

    load = os.getloadavg()
    print(f"one q5 grading of {args.solution.name}, settled, mean of {n} (load average {load[0]:.2f} {load[1]:.2f})")
    print(f"  sandboxed ({args.mode}): {total:8.1f} ms;  in-process: {statistics.mean(base_walls) * 1e3:8.1f} ms")
    tops = sorted(k for k in clock.seconds if "/" not in k)
    checks_ms = sum(statistics.mean(v) for v in per_check.values())
    print("\nwhere it goes (per grading):")
    children = [k for k in tops if k.startswith("child:")]
    for key in [*children, "load: send the source, run the module"]:
        print(f"  {key:<52} {ms(key):8.1f} ms  ({count(key):g}×)")
    print(f"  {'checks (their own wall time, below)':<52} {checks_ms:8.1f} ms")
    other = total - checks_ms - sum(ms(k) for k in [*children, "load: send the source, run the module"])
    print(f"  {'the rest (verdicts, pool hand-offs, the checker lock)':<52} {other:8.1f} ms")

    print("\nper check, ms:            sandboxed  waits on checker  answers checker  child trips  in-process")
    for name, durations in per_check.items():
        waited = ms(f"{name}/service waits on the checker")
        answered = sum(ms(k) for k in clock.seconds if k.startswith(f"{name}/service answers checker"))
        trips = sum(ms(k) for k in clock.seconds if k.startswith(f"{name}/child round trip"))
        print(
            f"  {name:<20} {visibility[name]:>8} {statistics.mean(durations):9.1f} {waited:17.1f} {answered:16.1f} "
            f"{trips:12.1f} {statistics.mean(base_checks[name]):11.1f}"
        )

    print("\nthe timing check, per grading:")
    for key in sorted(k for k in clock.seconds if k.startswith("timing/")):
        print(f"  {key[len('timing/') :]:<52} {ms(key):8.1f} ms  ({count(key):g}×)")


if __name__ == "__main__":
    main()
