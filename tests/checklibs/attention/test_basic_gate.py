"""Points for real work only: secondary checks pay only after a basic correctness probe (basic.gate)."""

from __future__ import annotations

from pathlib import Path

import pytest

from checklibs.attention import determinism_check, empty_row_check, equivariance_check, validation_check
from checklibs.attention.basic import NEEDS_BASIC, attention_probe, basic_problem, gate, gated
from checklibs.attention.dtype_device import dtype_device_check
from checklibs.attention.judge_probe import basic_layers_probe
from checklibs.attention.loop_vs_batched import agreement_check
from checklibs.attention.student_test_judge import layer_checks
from graders.code.checks import CheckFailed, check, load_checks, spec_of
from tests.checklibs.attention.direct_proxy import DirectProxy, run_check

SET_ROOT = Path(__file__).resolve().parents[3] / "problems" / "attention"
GATED_Q5 = [validation_check, empty_row_check, determinism_check, equivariance_check, dtype_device_check]


class CountingProxy(DirectProxy):
    """A DirectProxy that counts the calls of each function (to see the probe's cost and that it is not shared)."""

    def __init__(self, source: str) -> None:
        super().__init__(source)
        self.calls: dict[str, int] = {}

    def call(self, name, *args, **kwargs):
        self.calls[name] = self.calls.get(name, 0) + 1
        return super().call(name, *args, **kwargs)


def test_the_probe_passes_a_solution_and_names_what_is_wrong_otherwise(proxy_for):
    assert basic_problem(proxy_for("solutions/q5/masked_fill.py"), "scaled_attention") is None
    problem = basic_problem(proxy_for("mutants/q5/zeros_with_validation.py"), "scaled_attention")
    assert problem is not None and "weights differs from the reference" in problem and "tensor(" not in problem
    transposed = basic_problem(proxy_for("mutants/q5/weights_transposed.py"), "scaled_attention")
    assert transposed is not None and "shape" in transposed


def test_the_probe_tolerates_precision_loss_but_not_wrong_values(proxy_for):
    # float32 arithmetic is judged by the precision checks, not by the gate
    assert basic_problem(proxy_for("mutants/q5/float32_cast.py"), "scaled_attention") is None
    assert basic_problem(proxy_for("mutants/q5/missing_sqrt_dk.py"), "scaled_attention") is not None


@pytest.mark.parametrize("builder", GATED_Q5, ids=lambda b: b.__name__)
def test_zeros_that_validate_earn_nothing(proxy_for, builder):
    zeros = proxy_for("mutants/q5/zeros_with_validation.py")
    with pytest.raises(CheckFailed) as failed:
        builder()(zeros)
    assert failed.value.score_fraction == 0.0
    assert NEEDS_BASIC in failed.value.feedback


@pytest.mark.parametrize("builder", [validation_check, empty_row_check, determinism_check, equivariance_check])
def test_without_the_gate_the_same_zeros_would_pass(proxy_for, builder):
    """What the issue found: these properties alone say nothing about the work done."""
    assert isinstance(builder(basic=False)(proxy_for("mutants/q5/zeros_with_validation.py")), str)


@pytest.mark.parametrize("builder", GATED_Q5, ids=lambda b: b.__name__)
def test_a_solution_keeps_its_points_and_its_feedback(proxy_for, builder):
    result = builder()(proxy_for("solutions/q5/einsum_stable_softmax.py"))
    assert isinstance(result, str) and NEEDS_BASIC not in result


def test_a_failing_probe_still_shows_the_checks_own_diagnosis(proxy_for):
    with pytest.raises(CheckFailed) as failed:
        determinism_check()(proxy_for("mutants/q5/dropout_left_on.py"))
    feedback = failed.value.feedback
    assert "two calls with the same inputs gave different" in feedback and NEEDS_BASIC in feedback
    assert failed.value.score_fraction == 0.0


def test_two_functions_returning_zeros_do_not_earn_the_agreement(proxy_for):
    zeros = proxy_for("mutants/q6/two_zero_functions.py")
    with pytest.raises(CheckFailed) as failed:
        agreement_check(points=2)(zeros)
    assert NEEDS_BASIC in failed.value.feedback
    assert isinstance(agreement_check(points=2, basic=False)(zeros), str)
    assert isinstance(agreement_check(points=2)(proxy_for("solutions/q6/einsum_styles.py")), str)


def test_gate_scores_zero_whatever_the_body_does():
    def failing_probe(student):
        return "wrong on the basic case"

    with pytest.raises(CheckFailed) as passed_body:
        gate(None, failing_probe, lambda: "fine")  # type: ignore[arg-type]
    assert passed_body.value.feedback == f"{NEEDS_BASIC}: wrong on the basic case"
    assert passed_body.value.score_fraction == 0.0

    def partial_body() -> str:
        raise CheckFailed("half right", score_fraction=0.5)

    with pytest.raises(CheckFailed) as partial:
        gate(None, failing_probe, partial_body)  # type: ignore[arg-type]
    assert partial.value.score_fraction == 0.0 and partial.value.feedback.startswith("half right\n")
    assert gate(None, lambda student: None, lambda: "fine") == "fine"  # type: ignore[arg-type]


def test_gated_keeps_the_checks_spec():
    @check(points=1.5, category="equivariance", visibility="visible", timeout_s=12, name="thing")
    def thing(student):
        """Does the thing."""
        return "ok"

    wrapped = gated(thing, lambda student: None)
    before, after = spec_of(thing), spec_of(wrapped)
    assert (after.name, after.points, after.category, after.visibility, after.timeout_s) == (
        before.name,
        before.points,
        before.category,
        before.visibility,
        before.timeout_s,
    )
    assert after.description == "Does the thing."
    assert wrapped(None) == "ok"


def test_each_check_probes_for_itself_and_nothing_is_shared_between_proxies(proxy_for):
    source = (SET_ROOT / "solutions" / "q5" / "masked_fill.py").read_text()
    check = validation_check()
    first, second = CountingProxy(source), CountingProxy(source)
    check(first)
    check(first)
    check(second)
    # one basic probe plus five malformed cases per run; the second proxy starts from nothing
    assert first.calls["scaled_attention"] == 2 * (1 + 5)
    assert second.calls["scaled_attention"] == 1 + 5
    probe = attention_probe("scaled_attention")
    assert probe(CountingProxy(source)) is None


def test_q7_tests_that_never_or_always_fail_earn_nothing(proxy_for):
    probe = basic_layers_probe()
    assert probe(proxy_for("solutions/q7/assert_close.py")) is None
    for mutant in ("never_fails.py", "always_fails.py", "raises_valueerror.py"):
        assert probe(proxy_for(f"mutants/q7/{mutant}")) is not None
    never = proxy_for("mutants/q7/never_fails.py")
    ungated = [spec_of(c) for c in layer_checks()]
    assert sum(run_check(spec, never).score for spec in ungated) == 4.5  # what the gate takes away
    checks = load_checks(SET_ROOT / "checks" / "q7.py")
    assert sum(run_check(spec, never).score for spec in checks) == 0
    assert sum(run_check(spec, proxy_for("mutants/q7/all_valid_mask.py")).score for spec in checks) == 8.5
