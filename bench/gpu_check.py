"""The device check: grade q5 and q6 of the attention set in the sandbox on CUDA and print the timing tables.

One prepared script for a machine with a GPU (run it in one call, then give the machine back):

    .venv/bin/python -m bench.gpu_check            # CUDA; exits 2 when there is none
    .venv/bin/python -m bench.gpu_check --device cpu   # the same path on the CPU, to try it anywhere

It grades each reference solution and the mutant that should lose only the timing points, and prints every check's
score and the timing feedback (student vs reference per T).
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from app.config import REPO_ROOT
from graders.code.checks import load_checks
from graders.code.runner import CodeGrader
from graders.model import CodeProblem
from graders.problemset.loader import load_problem_set
from graders.sandbox.config import SandboxConfig

SET = REPO_ROOT / "problems" / "attention"
FILES = {
    "q5": ["solutions/q5/masked_fill.py", "solutions/q5/einsum_stable_softmax.py"],
    "q6": ["solutions/q6/loop_and_matmul.py", "mutants/q6/batched_still_loops.py"],
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    device = parser.parse_args().device
    if device == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here; run with --device cpu to try the same path on the CPU")
        sys.exit(2)
    if device == "cuda":
        print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    spec = load_problem_set(SET).spec
    with CodeGrader(SandboxConfig(mode="bwrap", slots=1, device=device)) as grader:
        for problem_id, files in FILES.items():
            problem = spec.problem(problem_id)
            assert isinstance(problem, CodeProblem)
            checks = load_checks(SET / problem.checks)
            for rel in files:
                started = time.perf_counter()
                result = grader.grade(source=(SET / rel).read_text(), problem=problem, checks=checks)
                elapsed = time.perf_counter() - started
                print(
                    f"\n== {problem_id} {rel}: {result.score:g}/{result.max_score:g} {result.verdict} ({elapsed:.2f} s)"
                )
                for check in result.checks:
                    mark = "✓" if check.passed else "✗"
                    print(f"  {mark} {check.name:<28} {check.score:g}/{check.max_score:g}")
                    if check.category == "timing":
                        print("    " + check.feedback.replace("\n", "\n    "))


if __name__ == "__main__":
    main()
