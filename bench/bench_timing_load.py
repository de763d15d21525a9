"""Bench P-load: does load beside the grader refuse the attention set, or flip a timing verdict?

Run (the issue's full size): ``.venv/bin/python -m bench.bench_timing_load --gates 20 --verdicts 50 --spinners 8``
A reduced run: ``.venv/bin/python -m bench.bench_timing_load --gates 2 --verdicts 10 --spinners 4``

Two conditions in one run, the baseline first: the machine as it is, then ``--spinners`` CPU-bound processes beside
the grader (``while True: pass``, each bounded by ``--busy-s``), everything pinned to ``--cores`` cores. In each:

- the gate of the set's code problems (``run_mutant_gate``, as ``autograder problems validate`` runs it) ``--gates``
  times: how many runs refused the set (any problem), how many warned (a timing loss not reproduced), and how long a
  gate took;
- the timing checks alone, ``--verdicts`` times, on the correct solution, the Python-loop answer and every mutant
  declared ``caught-by: timing`` of q5 and q6: the timing scores seen, and in how many runs the verdict was the one
  the quiet baseline gave most often.

Targets (reported, never asserted): 0 refusals under load; every file's verdict the same in every run.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from graders.code.checks import load_checks
from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set
from graders.problemset.mutant_gate import TIMING, expected_categories, run_mutant_gate

ROOT = Path(__file__).resolve().parents[1]
SET_ROOT = ROOT / "problems" / "attention"
SPIN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
CORRECT = {"q5": "solutions/q5/masked_fill.py", "q6": "solutions/q6/loop_and_matmul.py"}
PYTHON_LOOP = {"q5": ROOT / "bench" / "q5_python_loop.py", "q6": SET_ROOT / "mutants" / "q6" / "batched_still_loops.py"}


def timing_files(problem_id: str) -> dict[str, Path]:
    """The correct solution, the Python-loop answer and every timing mutant of one problem, by label."""
    files = {f"correct ({Path(CORRECT[problem_id]).name})": SET_ROOT / CORRECT[problem_id]}
    files[f"Python loop ({PYTHON_LOOP[problem_id].name})"] = PYTHON_LOOP[problem_id]
    for path in sorted((SET_ROOT / "mutants" / problem_id).glob("*.py")):
        if TIMING in expected_categories(path.read_text(encoding="utf-8")) and path != PYTHON_LOOP[problem_id]:
            files[f"timing mutant ({path.name})"] = path
    return files


def pin(cores: int) -> set[int]:
    """Pin this process (and so the grader's zygote and children, forked later) to its first ``cores`` CPUs."""
    mine = sorted(os.sched_getaffinity(0))[:cores]
    os.sched_setaffinity(0, mine)
    return set(mine)


@contextlib.contextmanager
def spinners(count: int, seconds: float) -> Iterator[None]:
    """``count`` CPU-bound processes beside the grader (each exits by itself after ``seconds`` at most)."""
    procs = [subprocess.Popen([sys.executable, "-c", SPIN.format(seconds=seconds)]) for _ in range(count)]
    try:
        time.sleep(0.3 if procs else 0)  # let them start spinning
        yield
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()


def run_gates(grader: object, problems: list[CodeProblem], runs: int) -> tuple[int, int, list[float]]:
    """``runs`` gates of every code problem: (refused runs, runs with a warning, seconds per run)."""
    refused = warned = 0
    seconds = []
    for _ in range(runs):
        start = time.perf_counter()
        reports = [run_mutant_gate(p, SET_ROOT, grader) for p in problems]  # type: ignore[arg-type]
        seconds.append(time.perf_counter() - start)
        refused += any(not r.ok for r in reports)
        warned += any(r.warnings for r in reports)
        for report in reports:
            for line in report.problems + report.warnings:
                print(f"    {report.problem_id}: {line}", flush=True)
    return refused, warned, seconds


def timing_verdicts(grader: object, problem: CodeProblem, path: Path, runs: int) -> list[tuple[float, ...]]:
    """The scores of the problem's timing checks in ``runs`` gradings of one file (after one warm-up grading)."""
    checks = [c for c in load_checks(SET_ROOT / problem.checks) if c.category == TIMING]
    source = path.read_text(encoding="utf-8")
    grader.grade(source=source, problem=problem, checks=checks)  # type: ignore[attr-defined]
    found = []
    for _ in range(runs):
        result = grader.grade(source=source, problem=problem, checks=checks)  # type: ignore[attr-defined]
        found.append(tuple(c.score for c in result.checks))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--gates", type=int, default=20, help="gate runs per condition")
    parser.add_argument("--verdicts", type=int, default=50, help="timing gradings per file and condition")
    parser.add_argument("--spinners", type=int, default=8, help="CPU-bound processes beside, loaded condition")
    parser.add_argument("--cores", type=int, default=2, help="CPUs the bench, the grader and the spinners share")
    parser.add_argument("--mode", choices=["bwrap", "unsafe-local"], default="bwrap")
    parser.add_argument("--busy-s", type=float, default=3600.0, help="upper bound on a spinner's life")
    args = parser.parse_args()

    from graders.code.runner import CodeGrader
    from graders.sandbox.config import SandboxConfig

    cpus = pin(args.cores)
    spec = load_problem_set(SET_ROOT).spec
    problems = [p for p in spec.problems if isinstance(p, CodeProblem) and p.gradable]
    config = SandboxConfig(mode=args.mode, slots=1, dev_mode=args.mode == "unsafe-local")
    print(
        f"attention set, mode {args.mode}, CPUs {sorted(cpus)}; {args.gates} gates of {[p.id for p in problems]} "
        f"and {args.verdicts} timing gradings per file, quiet (baseline) and beside {args.spinners} CPU-bound "
        f"processes (load average now {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    baseline: dict[tuple[str, str], tuple[float, ...]] = {}
    gate_rows, verdict_rows = [], []
    with CodeGrader(config) as grader:
        for count in (0, args.spinners):
            condition = f"beside {count} CPU-bound" if count else "quiet (baseline)"
            with spinners(count, args.busy_s):
                refused, warned, seconds = run_gates(grader, problems, args.gates)
                gate_rows.append((condition, refused, warned, seconds))
                print(f"  {condition}: gates done, {refused} refused", flush=True)
                for problem_id in ("q5", "q6"):
                    problem = spec.problem(problem_id)
                    assert isinstance(problem, CodeProblem)
                    for label, path in timing_files(problem_id).items():
                        seen = timing_verdicts(grader, problem, path, args.verdicts)
                        counts = collections.Counter(seen)
                        if not count:
                            baseline[(problem_id, label)] = counts.most_common(1)[0][0]
                        same = counts[baseline[(problem_id, label)]]
                        verdict_rows.append((condition, problem_id, label, counts, same, len(seen)))
                        print(f"  {condition}: {problem_id} {label}: {same}/{len(seen)} same", flush=True)

    print(f"\n{'condition':<24} {'gates':>5} {'refused':>7} {'warned':>6} {'gate p50 s':>10} {'max s':>7}")
    for condition, refused, warned, seconds in gate_rows:
        print(
            f"{condition:<24} {len(seconds):>5} {refused:>7} {warned:>6} {statistics.median(seconds):>10.1f} "
            f"{max(seconds):>7.1f}"
        )
    print(f"\n{'condition':<24} {'problem':<7} {'file':<48} {'timing scores seen':<24} same as quiet")
    for condition, problem_id, label, counts, same, total in verdict_rows:
        seen = ", ".join(f"{'+'.join(f'{s:g}' for s in k)}×{n}" for k, n in counts.most_common())
        print(f"{condition:<24} {problem_id:<7} {label:<48} {seen:<24} {same}/{total}")
    print("targets: 0 refused beside the CPU-bound processes; every verdict the same as quiet in every run")


if __name__ == "__main__":
    main()
