"""Run every benchmark in bench/ in turn (`make bench`); each prints its numbers next to its own baseline.

Every module named ``bench_*`` is run: bench_burst (P2: a burst of q5 submissions, embedded and Celery),
bench_code_grading, bench_fill_in, bench_fill_in_concurrency (P3), bench_q5 and bench_timing_stability (the q5 timing
check's verdicts, quiet and beside a CPU-bound process), and any added later.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> None:
    names = sorted(m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)]) if m.name.startswith("bench_"))
    for name in names:
        print(f"\n=== {name}", flush=True)
        module = importlib.import_module(f"bench.{name}")
        sys.argv = [name]
        module.main()


if __name__ == "__main__":
    main()
