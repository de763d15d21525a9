"""The timing checks' scoring and re-measurement, with a proxy that reports fixed timings (nothing is timed)."""

from typing import Any

import pytest

from graders.code.attention.loop_vs_batched import speedup_check
from graders.code.attention.timing import ratio_score, timing_check
from graders.code.checks import CheckFailed, Timing


class FixedTimes:
    """A proxy whose time() answers from a table of seconds per (name, attempt)."""

    device = "cpu"

    def __init__(self, seconds: dict[str, list[float]]) -> None:
        self.seconds = seconds
        self.calls: dict[str, int] = {}
        self.defined: list[str] = []

    def define(self, source: str) -> None:
        self.defined.append(source)

    def time(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, **_: int) -> Timing:
        attempt = self.calls.get(name, 0)
        self.calls[name] = attempt + 1
        series = self.seconds[name]
        return Timing([series[min(attempt, len(series) - 1)]])


def test_ratio_score_is_full_then_log_linear_then_zero():
    assert ratio_score(5, 20, 100) == 1.0
    assert ratio_score(100, 20, 100) == 0.0
    assert 0.0 < ratio_score(50, 20, 100) < 1.0


def test_timing_check_shows_a_table_and_gives_full_points_within_the_ratio():
    proxy = FixedTimes({"scaled_attention": [0.002], "_ag_reference_attention": [0.001]})
    feedback = timing_check(sizes=(16, 32))(proxy)
    assert "yours ms" in feedback and "2.0×" in feedback
    assert proxy.defined  # the reference was defined in the jail before being timed


def test_a_stall_is_re_measured_before_it_costs_points():
    proxy = FixedTimes({"scaled_attention": [0.5, 0.002], "_ag_reference_attention": [0.001]})
    timing_check(sizes=(16,))(proxy)
    assert proxy.calls["scaled_attention"] == 2


def test_a_slow_function_gets_partial_credit():
    proxy = FixedTimes({"scaled_attention": [0.05], "_ag_reference_attention": [0.001]})
    with pytest.raises(CheckFailed) as failed:
        timing_check(sizes=(16,))(proxy)
    assert 0.0 < failed.value.score_fraction < 1.0
    assert "50× slower" in failed.value.feedback


def test_the_batched_version_must_be_several_times_faster_than_the_loop():
    fast = FixedTimes({"attention_loop": [0.03], "attention_batched": [0.001], "_ag_reference_batched": [0.0005]})
    assert "30× faster" in speedup_check(sizes=(8, 256))(fast)
    slow = FixedTimes({"attention_loop": [0.03], "attention_batched": [0.02], "_ag_reference_batched": [0.0005]})
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(8, 256))(slow)
    assert "only 1.5× faster than the loop" in failed.value.feedback
    assert slow.calls["attention_batched"] == 3  # two sizes, then one re-measurement before failing


def test_a_batched_version_far_slower_than_one_matrix_product_fails():
    # A heavy loop can make a looping "batched" version look fast; the reference exposes it.
    proxy = FixedTimes({"attention_loop": [0.5], "attention_batched": [0.02], "_ag_reference_batched": [0.0005]})
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(256,))(proxy)
    assert "40× slower than a matrix-product reference" in failed.value.feedback
