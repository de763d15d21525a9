"""P1q5: one full q5 grading through the warm sandboxed CodeGrader, against the same checks run in-process.

Run: ``.venv/bin/python -m bench.bench_q5 [--runs 20] [--solution problems/attention/solutions/q5/masked_fill.py]``

The in-process baseline (trusted file, no sandbox, one torch thread like the jail) shows what the checks cost by
themselves; the difference is the sandbox: taking pre-forked children from the slot's pool (one for the visible
checks, one shared by the hidden checks, one reference child for the timing check), the wire, the RPC round trips.
Two paces, as in bench_code_grading: "settled" (the pool is full when a submission arrives) and "back to back" (the
pool's refill bounds the rate). Targets (issue 10, P1q5): sandboxed p50 <= 150 ms and <= 1.5x the in-process run.

The sandboxed runs import and run the checks in the set's jailed checker (``graders.code.checker``), as the service
does; the line "checks in the service (before)" grades with the same warm grader but the checks imported here, as
the service did before the checker, so the difference is what the checker costs.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import torch

from graders.code.checks import CheckSpec, load_checks
from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set
from graders.results import GradeResult

SET_ROOT = Path(__file__).resolve().parents[1] / "problems" / "attention"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def measure(
    grade: Callable[[], GradeResult], runs: int, settle: Callable[[], None] = lambda: None
) -> tuple[list[float], dict[str, list[float]]]:
    """Wall seconds per grading (after one warm-up grading) and each check's durations in ms."""
    first = grade()
    assert first.score == first.max_score, f"the bench solution must score full marks: {first.to_dict()}"
    walls: list[float] = []
    per_check: dict[str, list[float]] = defaultdict(list)
    for _ in range(runs):
        settle()  # not timed
        start = time.perf_counter()
        result = grade()
        walls.append(time.perf_counter() - start)
        for check in result.checks:
            per_check[check.name].append(check.duration_ms)
    return walls, per_check


def paired(
    first: Callable[[], GradeResult], second: Callable[[], GradeResult], runs: int, settle: Callable[[], None]
) -> tuple[tuple[list[float], dict[str, list[float]]], tuple[list[float], dict[str, list[float]]]]:
    """``measure`` of two gradings, one run of each in turn."""
    out: list[tuple[list[float], dict[str, list[float]]]] = [([], defaultdict(list)), ([], defaultdict(list))]
    for grade in (first, second):
        warm = grade()
        assert warm.score == warm.max_score, f"the bench solution must score full marks: {warm.to_dict()}"
    for _ in range(runs):
        for (walls, per_check), grade in zip(out, (first, second), strict=True):
            settle()  # not timed
            start = time.perf_counter()
            result = grade()
            walls.append(time.perf_counter() - start)
            for check in result.checks:
                per_check[check.name].append(check.duration_ms)
    return out[0], out[1]


def line(label: str, walls: list[float]) -> str:
    p50, p95 = percentile(walls, 50) * 1e3, percentile(walls, 95) * 1e3
    return f"{label:<44} p50 {p50:8.1f} ms   p95 {p95:8.1f} ms   (n={len(walls)})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--solution", type=Path, default=SET_ROOT / "solutions" / "q5" / "masked_fill.py")
    parser.add_argument("--mode", choices=["bwrap", "unsafe-local"], default="bwrap")
    args = parser.parse_args()

    from graders.code.runner import CodeGrader
    from graders.sandbox.config import SandboxConfig
    from tests.checklibs.attention.direct_proxy import DirectGrader

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
        jailed = grader.checks(SET_ROOT, problem.checks)

        def grading(with_checks: list[CheckSpec]) -> Callable[[], GradeResult]:
            return lambda: grader.grade(source=source, problem=problem, checks=with_checks)

        runs = {"back to back": measure(grading(jailed), args.runs)}
        # Settled gradings with the checker and without it alternate, so that a change of the machine's load
        # falls on both alike.
        runs["settled"], before = paired(grading(jailed), grading(checks), args.runs, grader._pool.settle)
    cold = time.perf_counter() - start

    base50 = percentile(base_walls, 50) * 1e3
    print(f"P1q5: q5 grading of {args.solution.name}: {len(checks)} checks, {sum(c.points for c in checks):g} points")
    print(line("in-process baseline (no sandbox)", base_walls))
    for label, (walls, _) in runs.items():
        ratio = percentile(walls, 50) * 1e3 / base50
        print(f"{line(f'sandboxed ({args.mode}), {label}', walls)}   {ratio:4.2f}x in-process")
    ratio = percentile(before[0], 50) * 1e3 / base50
    print(f"{line('checks in the service (before), settled', before[0])}   {ratio:4.2f}x in-process")
    added = (percentile(runs["settled"][0], 50) - percentile(before[0], 50)) * 1e3
    print(f"the jailed checker adds {added:+.1f} ms at p50 (settled)")
    print(f"{'(grader start + warm-up + runs)':<34} {cold:8.2f} s total")
    p50 = percentile(runs["settled"][0], 50) * 1e3
    fast, ratio_met = "met" if p50 <= 150 else "MISSED", "met" if p50 <= 1.5 * base50 else "MISSED"
    print(f"targets (settled): p50 <= 150 ms: {fast}; <= 1.5x in-process: {ratio_met}")
    print("\nper check, median ms:  settled  back-to-back  in-process")
    for name, durations in runs["settled"][1].items():
        back, alone = statistics.median(runs["back to back"][1][name]), statistics.median(base_checks[name])
        print(f"  {name:<20} {statistics.median(durations):9.1f} {back:13.1f} {alone:11.1f}")


if __name__ == "__main__":
    main()
