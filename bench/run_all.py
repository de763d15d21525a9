"""Run every benchmark in bench/ in turn (`make bench`); each prints its numbers next to its own baseline.

Every module named ``bench_*`` is run: bench_burst (P2: a burst of q5 submissions, embedded and Celery),
bench_class_load (300 students logging in and submitting fill-in answers and q5 around a deadline, embedded and
Celery, against a 30-student class in the same run; it exits non-zero on a 5xx, a lost or a wrongly graded
submission), bench_code_grading, bench_fill_in, bench_fill_in_concurrency (P3), bench_q5 and
bench_timing_stability (the q5 timing check's verdicts, quiet and beside a CPU-bound process), and any added later.
A benchmark that fails its own checks fails the run (exit status 1) after the others have run.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> None:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_"))
    failed = []
    for name in names:
        print(f"\n=== {name}", flush=True)
        module = importlib.import_module(f"bench.{name}")
        sys.argv = [name]
        try:
            module.main()
        except SystemExit as exc:  # a benchmark that checks its results fails the run, after the others ran
            if exc.code:
                failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
        sys.exit(1)


if __name__ == "__main__":
    main()
