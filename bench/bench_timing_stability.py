"""Bench P-stability: is the q5 timing check's verdict the same every time, on a quiet and on a busy machine?

Run: ``.venv/bin/python -m bench.bench_timing_stability [--runs 20] [--mode bwrap|unsafe-local]``

Grades q5's timing check alone, ``--runs`` times each, on a correct solution (masked_fill.py), on the timing mutant
(mutants/q5/timing_slows_reference.py) and on a correct answer that loops over queries in Python
(bench/q5_python_loop.py): first on the machine as it is (the baseline of the same run), then with one CPU-bound
process beside it (a busy loop that exits by itself after ``--busy-s`` seconds at most, and is stopped earlier when
the runs are done). Prints, per file and condition, the scores seen, how many differ from the majority, the timing
check's wall time per grading, and how many calls of the student's function it made (every one verified).
Targets (reported, never asserted): 0 differing verdicts in 20 for the correct and the loop solution with the
CPU-bound process beside; the timing mutant always loses points.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from graders.code.checks import load_checks
from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set

ROOT = Path(__file__).resolve().parents[1]
SET_ROOT = ROOT / "problems" / "attention"
FILES = {
    "correct (masked_fill.py)": SET_ROOT / "solutions" / "q5" / "masked_fill.py",
    "Python loop (bench/q5_python_loop.py)": ROOT / "bench" / "q5_python_loop.py",
    "timing mutant (timing_slows_reference.py)": SET_ROOT / "mutants" / "q5" / "timing_slows_reference.py",
}
CHECKED = re.compile(r"all (\d+) results were checked")  # the student's calls the check made (and verified)
BUSY_LOOP = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


@contextlib.contextmanager
def cpu_bound(active: bool, seconds: float) -> Iterator[None]:
    """One busy-loop process beside the grading (bounded: it exits by itself after ``seconds``)."""
    if not active:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", BUSY_LOOP.format(seconds=seconds)])
    try:
        time.sleep(0.2)  # let it start spinning
        yield
    finally:
        proc.terminate()
        proc.wait()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--mode", choices=["bwrap", "unsafe-local"], default="bwrap")
    parser.add_argument("--busy-s", type=float, default=600.0, help="upper bound on the busy loop's life")
    args = parser.parse_args()

    from graders.code.runner import CodeGrader
    from graders.sandbox.config import SandboxConfig

    problem = load_problem_set(SET_ROOT).spec.problem("q5")
    assert isinstance(problem, CodeProblem)
    checks = [c for c in load_checks(SET_ROOT / problem.checks) if c.category == "timing"]
    assert len(checks) == 1, "q5 has one timing check"
    config = SandboxConfig(mode=args.mode, slots=1, dev_mode=args.mode == "unsafe-local")
    print(f"q5 timing check ({checks[0].points:g} pt), {args.runs} gradings per file and condition, mode {args.mode}")
    print(
        f"{'condition':<22} {'file':<42} {'scores seen':<22} {'differ':>6}  {'check p50 ms':>12}  {'p95 ms':>8}  "
        f"{'calls p50':>9}  {'max':>4}"
    )
    with CodeGrader(config) as grader:
        for busy in (False, True):
            condition = "1 CPU-bound beside" if busy else "as is (baseline)"
            with cpu_bound(busy, args.busy_s):
                for label, path in FILES.items():
                    source = path.read_text(encoding="utf-8")
                    grader.grade(source=source, problem=problem, checks=checks)  # warm-up grading, not counted
                    scores, walls, calls = [], [], []
                    for _ in range(args.runs):
                        result = grader.grade(source=source, problem=problem, checks=checks)
                        check = result.checks[0]
                        scores.append(check.score)
                        walls.append(check.duration_ms)
                        found = CHECKED.search(check.feedback)
                        calls.append(int(found.group(1)) if found else 0)
                    counts = collections.Counter(scores)
                    majority = counts.most_common(1)[0][1]
                    seen = ", ".join(f"{s:g}×{n}" for s, n in sorted(counts.items(), reverse=True))
                    print(
                        f"{condition:<22} {label:<42} {seen:<22} {args.runs - majority:>6}  "
                        f"{statistics.median(walls):>12.1f}  {percentile(walls, 95):>8.1f}  "
                        f"{statistics.median(calls):>9g}  {max(calls):>4}",
                        flush=True,
                    )
    print(
        "targets: differ = 0 for the correct and the loop solution with the CPU-bound process beside; the timing "
        "mutant's scores all below the check's points"
    )


if __name__ == "__main__":
    main()
