"""How long the command line takes to start: `autograder --help` and an offline fill-in `autograder grade`, each a
fresh process, against the baseline of the same run, `python -c "import fastapi, sqlalchemy, pydantic"` (what any
command of the service must import). Issue 21's target: within 3x of the baseline.

The commands run in turn (baseline, --help, grade, baseline, ...), so that load from outside falls on each alike.
Exits 1 when a command fails (the grade must score full marks), not when the target is missed.

    .venv/bin/python -m bench.bench_cli_start [--runs 15] [--torch]

--torch: also time `python -c "import torch"`, for scale (what every command paid before).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from app.config import REPO_ROOT

AUTOGRADER = Path(sys.executable).with_name("autograder")
CH9_Q1 = {"b1": "√d_k", "b2": "V", "b3": "查找的信息", "b4": "匹配", "b5": "内容"}  # full marks
GRADE = [str(AUTOGRADER), "grade", "--set", "ch9", "--problem", "q1"]
TARGET = 3.0


def commands(with_torch: bool) -> dict[str, list[str]]:
    out = {
        'python -c "import fastapi, sqlalchemy, pydantic" (baseline)': [
            sys.executable,
            "-c",
            "import fastapi, sqlalchemy, pydantic",
        ],
        "autograder --help": [str(AUTOGRADER), "--help"],
        "autograder grade (fill-in, ch9 q1)": [*GRADE, "--answers", json.dumps(CH9_Q1)],
    }
    if with_torch:
        out['python -c "import torch" (for scale)'] = [sys.executable, "-c", "import torch"]
    return out


def timed(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        print(f"FAILED ({done.returncode}): {' '.join(argv)}\n{done.stdout}{done.stderr}", file=sys.stderr)
        sys.exit(1)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--torch", action="store_true", help='also time python -c "import torch"')
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRADER_")}
        env |= {"AUTOGRADER_DATA_DIR": str(Path(tmp) / "data"), "AUTOGRADER_PROBLEMS_DIR": str(REPO_ROOT / "problems")}
        runs = commands(args.torch)
        times: dict[str, list[float]] = {name: [] for name in runs}
        for argv in runs.values():  # one untimed run each: the file cache, .pyc files
            timed(argv, env)
        for _ in range(args.runs):
            for name, argv in runs.items():
                times[name].append(timed(argv, env))
    load = os.getloadavg()
    print(f"{args.runs} runs each, interleaved; load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    baseline = statistics.median(next(iter(times.values())))
    for name, values in times.items():
        median = statistics.median(values)
        print(
            f"  {name:<58} median {median * 1000:7.0f} ms  min {min(values) * 1000:7.0f} ms  {median / baseline:5.2f}x"
        )
    worst = max(statistics.median(v) for k, v in times.items() if k.startswith("autograder")) / baseline
    print(f"target: the commands within {TARGET:g}x of the baseline: {'met' if worst <= TARGET else 'NOT met'}")


if __name__ == "__main__":
    main()
