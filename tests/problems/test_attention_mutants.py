"""The attention set's code problems through the real sandboxed CodeGrader: the whole solutions × mutants matrix.

Every reference solution must score full marks, every mutant must lose points, and each mutant must lose them
in the check category it was written to exhibit (declared in the file as ``# caught-by:`` and pinned here, so
neither can drift alone). One warm grader for the module; tensors are small, so the file runs in seconds.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graders.code.runner import CodeGrader
from graders.model import CodeProblem
from graders.problemset.likeness import behaves_like, failure_vector
from graders.problemset.loader import load_problem_set
from graders.problemset.mutant_gate import GateReport, expected_categories, run_mutant_gate

SET_ROOT = Path(__file__).resolve().parents[2] / "problems" / "attention"

INTENDED = {
    "q5": {
        "wrong_softmax_axis.py": "softmax_axis",
        "weights_transposed.py": "softmax_axis",
        "inverted_mask.py": "masking",
        "mask_on_query_axis.py": "masking",
        "masked_weights_not_zero.py": "masking",
        "causal_strict.py": "masking",
        "causal_wrong_triangle.py": "masking",
        "prefix_mask_from_lengths.py": "masking",
        "missing_sqrt_dk.py": "reference_example",
        "float32_cast.py": "gradient",
        "detached_gradients.py": "gradient",
        "numpy_round_trip.py": "gradient",
        "scale_by_dv.py": "gradient",
        "nan_instead_of_valueerror.py": "empty_row",
        "naive_exp_softmax.py": "stability",
        "no_input_validation.py": "validation",
        "inplace_mutation.py": "gradient",
        "inplace_forges_torch_equal.py": "gradient",
        "inplace_hidden_from_probe.py": "gradient",
        "timing_slows_reference.py": "timing",
        "dropout_left_on.py": "determinism",
        "zeros_with_validation.py": "validation",
        "per_query_loop.py": "method",
        "broadcast_scores.py": "method",
        "inplace_without_grad.py": "method",
        "seeded_random_key_order.py": "method",
        "memoised_outputs.py": "method",
        "float64_for_float32.py": "shape",
        "causal_bottom_right.py": "masking",
        "causal_square_mask.py": "masking",
        "exp_before_mask.py": "stability",
        "renormalised_softmax.py": "stability",
        "mask_flipped_in_place.py": "method",
    },
    "q6": {
        "loop_missing_scale.py": "softmax_axis",
        "batched_wrong_axis.py": "determinism",
        "loop_naive_exp.py": "stability",
        "loop_float32.py": "gradient",
        "batched_still_loops.py": "timing",
        "batched_memoised.py": "timing",
        "two_zero_functions.py": "softmax_axis",
        "loop_is_batched_with_sleep.py": "method",
        "loop_sleeps_at_timing_sizes.py": "timing",
        "loop_calls_softmax.py": "method",
        "loop_full_scores_first.py": "method",
        "loop_weighted_sum_after.py": "method",
        "batched_broadcast_sum.py": "method",
        "loop_global_max.py": "stability",
    },
    "q7": {
        "never_fails.py": "equivariance",
        "always_fails.py": "equivariance",
        "mask_not_permuted.py": "equivariance",
        "no_unpermute.py": "equivariance",
        "all_valid_mask.py": "equivariance",
        "identifies_layers_by_name.py": "equivariance",
        "counts_its_calls.py": "equivariance",
        "fixed_permutation.py": "method",
        "fixed_inputs.py": "method",
        "exact_comparison.py": "equivariance",
        "raises_valueerror.py": "equivariance",
    },
}


def _require_jail() -> None:
    """Skip without bubblewrap/root, except in CI (AUTOGRADER_TEST_REQUIRE_SERVICES=1), where that fails."""
    missing = [m for m, bad in (("bwrap", shutil.which("bwrap") is None), ("root", os.geteuid() != 0)) if bad]
    if not missing:
        return
    if os.environ.get("AUTOGRADER_TEST_REQUIRE_SERVICES") == "1":
        pytest.fail(f"the sandbox needs {', '.join(missing)}")
    pytest.skip(f"the sandbox needs {', '.join(missing)}")


@pytest.fixture(scope="module")
def gates() -> Iterator[dict[str, GateReport]]:
    _require_jail()
    from graders.sandbox.config import SandboxConfig

    spec = load_problem_set(SET_ROOT).spec
    with CodeGrader(SandboxConfig(mode="bwrap", slots=1)) as grader:
        reports: dict[str, GateReport] = {}
        for problem_id in INTENDED:
            problem = spec.problem(problem_id)
            assert isinstance(problem, CodeProblem)
            reports[problem_id] = run_mutant_gate(problem, SET_ROOT, grader)
        yield reports


def _rows(report: GateReport, kind: str) -> list[Any]:
    return [row for row in report.rows if row.kind == kind]


@pytest.mark.parametrize("problem_id", list(INTENDED))
def test_the_gate_passes(gates, problem_id):
    report = gates[problem_id]
    assert report.ok, report.render_text()


@pytest.mark.parametrize("problem_id", list(INTENDED))
def test_every_solution_gets_full_marks(gates, problem_id):
    solutions = _rows(gates[problem_id], "solution")
    assert len(solutions) >= 2
    for row in solutions:
        assert row.full_marks and row.verdict == "accepted", (row.path, row.cells, row.message)


@pytest.mark.parametrize("problem_id", list(INTENDED))
def test_every_mutant_loses_points_in_its_intended_category(gates, problem_id):
    report = gates[problem_id]
    mutants = {row.path: row for row in _rows(report, "mutant")}
    assert set(mutants) == set(INTENDED[problem_id]), "a mutant file without an intended category, or missing"
    for name, category in INTENDED[problem_id].items():
        row = mutants[name]
        assert not row.full_marks, f"{name} scored full marks"
        lost = row.lost_in(report.categories)
        assert category in lost, f"{name} lost points only in {lost}"


@pytest.mark.parametrize("problem_id", list(INTENDED))
def test_the_files_declare_the_same_intent(problem_id):
    for name, category in INTENDED[problem_id].items():
        source = (SET_ROOT / "mutants" / problem_id / name).read_text(encoding="utf-8")
        assert category in expected_categories(source), name


def test_the_shipped_bug_hints_are_told_for_their_own_mutants_only(gates):
    """Each q5 hint of the shipped set, in English and Chinese, is what a student whose checks fail as that mutant's
    do is told (the matcher of graders.problemset.likeness on the gate's own matrix, as the submission page reads
    it from the version's report); a reference solution, which fails nothing, is told nothing."""
    spec = load_problem_set(SET_ROOT).spec
    hinted = 0
    for problem_id, report in gates.items():
        problem = spec.problem(problem_id)
        assert isinstance(problem, CodeProblem)
        hints = problem.bug_hints
        gate = json.loads(json.dumps(report.to_dict()))  # as stored in the version's validation report
        for row in gate["files"]:
            failed = failure_vector(((name, cell["passed"]) for name, cell in row["checks"].items()), gate)
            told = [mutant for mutant in behaves_like(gate, failed) if mutant in hints]
            if row["kind"] == "solution":
                assert failed == frozenset() and told == [], row["path"]
            elif row["path"] in hints:
                assert told[:1] == [row["path"]], (row["path"], sorted(failed or ()), told)
                words = hints[row["path"]]
                assert isinstance(words, dict) and words.get("en") and words.get("zh_CN"), words
                assert re.search(r"[\u4e00-\u9fff]", words["zh_CN"]), words  # Chinese words, not a copy
                hinted += 1
    assert hinted >= 3  # wrong_softmax_axis, missing_sqrt_dk and inverted_mask
