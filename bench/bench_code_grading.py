"""Warm end-to-end code grading latency through CodeGrader, against a fresh `python` process per submission.

Run: .venv/bin/python -m bench.bench_code_grading [--runs N] [--fresh-runs M] [--mode bwrap|unsafe-local]
Targets: warm p50 < 100 ms on CPU, and >= 10x faster than the fresh process.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def bench_warm(mode: str, checks_path: Path, runs: int) -> list[float]:
    config = SandboxConfig(mode=mode, dev_mode=mode == "unsafe-local")  # type: ignore[arg-type]
    checks = load_checks(checks_path)
    times = []
    with CodeGrader(config) as grader:
        for i in range(runs + 3):
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
        subprocess.run([sys.executable, "-c", FRESH, str(source), str(checks_path)], check=True)
        times.append(time.perf_counter() - start)
    return times


def main() -> None:
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
        warm = bench_warm(mode, checks_path, args.runs)
        fresh = bench_fresh(folder, checks_path, args.fresh_runs)
    w50, w95 = percentile(warm, 0.5) * 1000, percentile(warm, 0.95) * 1000
    f50, f95 = percentile(fresh, 0.5) * 1000, percentile(fresh, 0.95) * 1000
    print(f"warm CodeGrader ({mode}, {len(warm)} runs): p50 {w50:.1f} ms  p95 {w95:.1f} ms")
    print(f"fresh python per submission ({len(fresh)} runs): p50 {f50:.1f} ms  p95 {f95:.1f} ms")
    print(f"ratio fresh/warm (p50): {f50 / w50:.1f}x  (mean warm {statistics.mean(warm) * 1000:.1f} ms)")
    fast, ratio = "met" if w50 < 100 else "MISSED", "met" if f50 >= 10 * w50 else "MISSED"
    print(f"targets: warm p50 < 100 ms: {fast}; >= 10x faster than a fresh process: {ratio}")


if __name__ == "__main__":
    main()
