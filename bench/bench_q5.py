"""Bench: one full q5 grading through the warm sandboxed CodeGrader, against the same checks run in-process.

Run: ``.venv/bin/python -m bench.bench_q5 [--runs 20] [--solution problems/attention/solutions/q5/masked_fill.py]``

The in-process baseline (trusted file, no sandbox, one torch thread like the jail) shows what the checks cost by
themselves; the difference is the sandbox: fork from the warm zygote, lockdown, the wire, the RPC round trips.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch

from graders.code.checks import load_checks
from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set
from graders.results import GradeResult

SET_ROOT = Path(__file__).resolve().parents[1] / "problems" / "attention"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure(grade: Callable[[], GradeResult], runs: int) -> tuple[list[float], dict[str, list[float]]]:
    """Wall seconds per grading (after one warm-up grading) and each check's durations in ms."""
    first = grade()
    assert first.score == first.max_score, f"the bench solution must score full marks: {first.to_dict()}"
    walls: list[float] = []
    per_check: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        start = time.perf_counter()
        result = grade()
        walls.append(time.perf_counter() - start)
        for check in result.checks:
            per_check[check.name].append(check.duration_ms)
    return walls, per_check


def line(label: str, walls: list[float]) -> str:
    p50, p95 = percentile(walls, 50) * 1e3, percentile(walls, 95) * 1e3
    return f"{label:<34} p50 {p50:8.1f} ms   p95 {p95:8.1f} ms   (n={len(walls)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--solution", type=Path, default=SET_ROOT / "solutions" / "q5" / "masked_fill.py")
    parser.add_argument("--mode", choices=["bwrap", "unsafe-local"], default="bwrap")
    args = parser.parse_args()

    from graders.code.runner import CodeGrader
    from graders.sandbox.config import SandboxConfig
    from tests.graders.code.attention.direct_proxy import DirectGrader

    problem = load_problem_set(SET_ROOT).spec.problem("q5")
    assert isinstance(problem, CodeProblem)
    checks = load_checks(SET_ROOT / problem.checks)
    source = args.solution.read_text(encoding="utf-8")

    torch.set_num_threads(1)  # the jail runs torch on one thread; the baseline does too
    direct = DirectGrader()
    base_walls, base_checks = measure(lambda: direct.grade(source=source, problem=problem, checks=checks), args.runs)

    config = SandboxConfig(mode=args.mode, slots=1, dev_mode=args.mode == "unsafe-local")
    start = time.perf_counter()
    with CodeGrader(config) as grader:
        walls, per_check = measure(lambda: grader.grade(source=source, problem=problem, checks=checks), args.runs)
    cold = time.perf_counter() - start

    print(f"q5 grading of {args.solution.name}: {len(checks)} checks, {sum(c.points for c in checks):g} points")
    print(line("in-process baseline (no sandbox)", base_walls))
    print(line(f"CodeGrader warm ({args.mode})", walls))
    print(f"{'(grader start + warm-up + runs)':<34} {cold:8.2f} s total")
    print("\nper check, median ms:  sandboxed  in-process")
    for name, durations in per_check.items():
        print(f"  {name:<20} {statistics.median(durations):10.1f}  {statistics.median(base_checks[name]):10.1f}")


if __name__ == "__main__":
    main()
