"""What forking a slot's children only between submissions costs (``prefork.ChildPool.serving``).

One slot grades the sandbox tests' small problem (``tests.sandbox.support.GOOD_SOURCE``): first back to back, where
a submission may wait for the children forked after the one before it gave the slot back, then with the pool
settled before each. Prints the median wall time of ``CodeGrader.grade`` for each. Needs bubblewrap and root.

    .venv/bin/python -m bench.bench_pool_turnover [--n 15]
"""

from __future__ import annotations

import argparse
import statistics
import time

from graders.code.runner import CodeGrader
from tests.sandbox import support


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=15)
    n = parser.parse_args().n
    with CodeGrader(support.jail_config(hidden_paths=[])) as grader:
        for _ in range(3):  # warm: the pool's ceiling and depth settle
            support.grade(grader, support.GOOD_SOURCE)
        back, settled = [], []
        for _ in range(n):
            start = time.perf_counter()
            support.grade(grader, support.GOOD_SOURCE)
            back.append(time.perf_counter() - start)
        for _ in range(n):
            grader._pool.settle()
            start = time.perf_counter()
            support.grade(grader, support.GOOD_SOURCE)
            settled.append(time.perf_counter() - start)
    print(f"back to back: median {statistics.median(back) * 1000:.0f} ms over {n}")
    print(f"pool settled first: median {statistics.median(settled) * 1000:.0f} ms over {n}")


if __name__ == "__main__":
    main()
