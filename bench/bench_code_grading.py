"""P1: warm end-to-end code grading latency through CodeGrader, against a fresh `python` process per submission.

Run: .venv/bin/python -m bench.bench_code_grading [--runs N] [--fresh-runs M] [--mode bwrap|unsafe-local]

The problem is a trivial torch one: two checks, both hidden (the default), so one grading uses two children: the
submission's own (which loads the source) and the one its hidden checks share (docs/sandbox.md). Two paces are
measured: "settled", where each submission finds the slot's pool of pre-forked children full (a warm grader between
submissions: what one submission waits for), and "back to back", where each submission starts the moment the
previous one returned, so the pool's refill (fork + lockdown + reap of two children per grading) bounds the rate.
Targets (issue 10, P1): warm p50 <= 10 ms, and >= 150x faster than the fresh process.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from graders.code.checks import load_checks
from graders.code.runner import CodeGrader
from graders.model import CodeProblem
from graders.results import Verdict
from graders.sandbox.config import SandboxConfig

CHECKS = """
import torch
from graders.code.checks import CheckFailed, check


def _inputs():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 4, 8, 16, generator=g, dtype=torch.float64) for _ in range(3))
    return q, k, v, torch.rand(2, 1, 8, 8, generator=g) > 0.2


def _reference(q, k, v, mask):
    scores = (q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5).masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


@check(points=1, category="reference_example")
def matches_reference(student):
    q, k, v, mask = _inputs()
    if not torch.allclose(student.call("scaled_attention", q, k, v, mask), _reference(q, k, v, mask)):
        raise CheckFailed("output differs from the reference")


@check(points=1, category="gradient")
def gradient(student):
    q, k, v, mask = _inputs()
    g = torch.ones(2, 4, 8, 16, dtype=torch.float64)
    _, grads = student.call_with_grad("scaled_attention", [q, k, v, mask], {}, [g], [0, 1, 2])
    ref = [t.clone().requires_grad_(True) for t in (q, k, v)]
    want = torch.autograd.grad(_reference(*ref, mask), ref, g)
    if not all(a is not None and torch.allclose(a, b) for a, b in zip(grads, want)):
        raise CheckFailed("gradients differ")
"""

SOLUTION = """
import torch

def scaled_attention(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v
"""

# The baseline: the same checks, with the student's function called directly in one fresh interpreter.
FRESH = """
import sys, types
from graders.code.checks import load_checks
source, checks_path = open(sys.argv[1]).read(), sys.argv[2]
module = types.ModuleType("submission")
exec(compile(source, "submission.py", "exec"), module.__dict__)

class Direct:
    device = "cpu"
    def call(self, name, *args, **kwargs):
        return getattr(module, name)(*args, **kwargs)
    def call_with_grad(self, name, args, kwargs, grad_outputs, wrt):
        import torch
        args = [a.detach().requires_grad_(True) if i in wrt else a for i, a in enumerate(args)]
        out = getattr(module, name)(*args, **kwargs)
        grads = torch.autograd.grad([out], [args[i] for i in wrt], grad_outputs, allow_unused=True)
        return out.detach(), list(grads)

for spec in load_checks(__import__("pathlib").Path(checks_path)):
    spec.func(Direct())
"""

PROBLEM = CodeProblem.model_validate(
    {
        "kind": "code",
        "id": "bench",
        "title": "bench",
        "prompt": "prompts/bench.md",
        "entrypoints": ["scaled_attention"],
        "checks": "checks/bench.py",
    }
)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def bench_warm(mode: str, checks_path: Path, runs: int, *, settle: bool) -> list[float]:
    config = SandboxConfig(mode=mode, dev_mode=mode == "unsafe-local")  # type: ignore[arg-type]
    checks = load_checks(checks_path)
    times = []
    with CodeGrader(config) as grader:
        for i in range(runs + 3):
            if settle:  # not timed: the pool refills between submissions, as on a grader that is not saturated
                grader._pool.settle()
            start = time.perf_counter()
            result = grader.grade(source=SOLUTION, problem=PROBLEM, checks=checks)
            elapsed = time.perf_counter() - start
            assert result.verdict == Verdict.ACCEPTED, result.to_dict()
            if i >= 3:  # the first gradings warm the trusted side's own code paths
                times.append(elapsed)
    return times


def bench_fresh(folder: Path, checks_path: Path, runs: int) -> list[float]:
    source = folder / "submission.py"
    source.write_text(SOLUTION)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", FRESH, str(source), str(checks_path)], check=True, env=FRESH_ENV)
        times.append(time.perf_counter() - start)
    return times


# One torch thread everywhere, as in the jail: on a loaded 2-core machine, waking torch's intra-op threads for
# these tiny tensors costs more than the work (the trusted side's checks went from ~190 to ~290 ms a grading).
FRESH_ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


def main() -> None:
    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--fresh-runs", type=int, default=8)
    parser.add_argument("--mode", choices=["bwrap", "unsafe-local"], default=None)
    args = parser.parse_args()
    mode = args.mode or ("bwrap" if shutil.which("bwrap") else "unsafe-local")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        checks_path = folder / "checks.py"
        checks_path.write_text(CHECKS)
        settled = bench_warm(mode, checks_path, args.runs, settle=True)
        back_to_back = bench_warm(mode, checks_path, args.runs, settle=False)
        fresh = bench_fresh(folder, checks_path, args.fresh_runs)
    f50, f95 = percentile(fresh, 0.5) * 1000, percentile(fresh, 0.95) * 1000
    print(f"P1: trivial torch problem (2 hidden checks: 2 children a grading), mode {mode}")
    for label, warm in (("warm, pool settled", settled), ("warm, back to back", back_to_back)):
        w50, w95 = percentile(warm, 0.5) * 1000, percentile(warm, 0.95) * 1000
        print(f"  {label:<30} p50 {w50:7.1f} ms  p95 {w95:7.1f} ms  ({len(warm)} runs)  fresh/warm {f50 / w50:6.1f}x")
    print(f"  {'fresh python per submission':<30} p50 {f50:7.1f} ms  p95 {f95:7.1f} ms  ({len(fresh)} runs)")
    w50 = percentile(settled, 0.5) * 1000
    fast, ratio = "met" if w50 <= 10 else "MISSED", "met" if f50 >= 150 * w50 else "MISSED"
    print(f"targets (settled): warm p50 <= 10 ms: {fast}; >= 150x faster than a fresh process: {ratio}")


if __name__ == "__main__":
    main()
