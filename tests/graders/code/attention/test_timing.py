"""The timing checks' scoring, re-measurement and defences, with a proxy that reports fixed timings."""

from typing import Any

import pytest
import torch

from graders.code.attention.jail_sources import (
    REFERENCE_BATCHED_NAME,
    REFERENCE_BATCHED_SOURCE,
    REFERENCE_NAME,
    REFERENCE_SOURCE,
)
from graders.code.attention.loop_vs_batched import speedup_check
from graders.code.attention.reference import reference_attention
from graders.code.attention.timing import ratio_score, time_fresh, timing_check
from graders.code.checks import CheckFailed, Timing
from tests.graders.code.attention.direct_proxy import DirectProxy


class FixedTimes:
    """A proxy whose time() answers from a table of seconds per (name, measurement); nothing is timed.

    A measurement starts with a warm-up call (repeat=0); every timed run is its own call (repeat=1). call()
    answers with the trusted reference, so the verification among the timed runs passes unless ``wrong``. It has
    no define(): the timing checks must not run anything beside the student's code.
    """

    device = "cpu"

    def __init__(self, seconds: dict[str, list[float]], *, wrong: bool = False) -> None:
        self.seconds = seconds
        self.calls: dict[str, int] = {}
        self.inputs: list[torch.Tensor] = []
        self.references: list[str] = []
        self.wrong = wrong

    def _seconds(self, name: str) -> float:
        series = self.seconds[name]
        return series[min(self.calls.get(name, 1) - 1, len(series) - 1)]

    def time(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None, **options: int) -> Timing:
        self.inputs.append(args[0])
        if options["repeat"] == 0:
            self.calls[name] = self.calls.get(name, 0) + 1
            return Timing([])
        return Timing([self._seconds(name)] * options["repeat"])

    def time_reference(self, source: str, name: str, args: list[Any], kwargs: Any = None, **options: int) -> Timing:
        self.references.append(name)
        assert f"def {name}(" in source
        self.calls[name] = self.calls.get(name, 0) + 1
        return Timing([self._seconds(name)] * options["repeat"])

    def call(self, name: str, *args: Any, **kwargs: Any) -> Any:
        self.inputs.append(args[0])
        out, weights = reference_attention(*args, **kwargs)
        return (out.float() + 1, weights.float()) if self.wrong else (out.float(), weights.float())


def test_ratio_score_is_full_then_log_linear_then_zero():
    assert ratio_score(5, 20, 100) == 1.0
    assert ratio_score(100, 20, 100) == 0.0
    assert 0.0 < ratio_score(50, 20, 100) < 1.0


def test_timing_check_shows_a_table_and_gives_full_points_within_the_ratio():
    proxy = FixedTimes({"scaled_attention": [0.002], REFERENCE_NAME: [0.001]})
    feedback = timing_check(sizes=(16, 32))(proxy)
    assert "yours ms" in feedback and "2.0×" in feedback
    assert proxy.references == [REFERENCE_NAME, REFERENCE_NAME]  # the baseline is timed in a clean process


def test_every_timed_run_gets_inputs_of_its_own():
    proxy = FixedTimes({"scaled_attention": [0.002], REFERENCE_NAME: [0.001]})
    timing_check(sizes=(16, 32), repeat=3)(proxy)
    # per size: one warm-up, three timed runs and one verification call, all on different inputs
    assert len(proxy.inputs) == 10
    assert all(not torch.equal(a, b) for i, a in enumerate(proxy.inputs) for b in proxy.inputs[i + 1 :])


def test_a_stall_is_re_measured_before_it_costs_points():
    proxy = FixedTimes({"scaled_attention": [0.5, 0.002], REFERENCE_NAME: [0.001]})
    timing_check(sizes=(16,))(proxy)
    assert proxy.calls["scaled_attention"] == 2


def test_a_slow_function_gets_partial_credit():
    proxy = FixedTimes({"scaled_attention": [0.05], REFERENCE_NAME: [0.001]})
    with pytest.raises(CheckFailed) as failed:
        timing_check(sizes=(16,))(proxy)
    assert 0.0 < failed.value.score_fraction < 1.0
    assert "50× slower" in failed.value.feedback


def test_a_fast_but_wrong_function_gets_no_timing_points():
    proxy = FixedTimes({"scaled_attention": [0.0001], REFERENCE_NAME: [0.001]}, wrong=True)
    with pytest.raises(CheckFailed) as failed:
        timing_check(sizes=(16,))(proxy)
    assert failed.value.score_fraction == 0.0
    assert "one of the calls made while timing" in failed.value.feedback
    assert "returned wrong output" in failed.value.feedback
    proxy = FixedTimes({"scaled_attention": [0.0001], REFERENCE_NAME: [0.001]}, wrong=True)
    assert "Within 20×" in timing_check(sizes=(16,), verify=False)(proxy)


def test_the_batched_version_must_be_several_times_faster_than_the_loop():
    ref = REFERENCE_BATCHED_NAME
    fast = FixedTimes({"attention_loop": [0.03], "attention_batched": [0.001], ref: [0.0005]})
    assert "30× faster" in speedup_check(sizes=(8, 256))(fast)
    slow = FixedTimes({"attention_loop": [0.03], "attention_batched": [0.02], ref: [0.0005]})
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(8, 256))(slow)
    assert "only 1.5× faster than the loop" in failed.value.feedback
    assert slow.calls["attention_batched"] == 3  # two sizes, then one re-measurement before failing


def test_a_batched_version_far_slower_than_one_matrix_product_fails():
    # A heavy loop can make a looping "batched" version look fast; the reference exposes it.
    proxy = FixedTimes({"attention_loop": [0.5], "attention_batched": [0.02], REFERENCE_BATCHED_NAME: [0.0005]})
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(256,))(proxy)
    assert "40× slower than a matrix-product reference" in failed.value.feedback


def test_loop_and_batched_never_see_the_same_inputs():
    proxy = FixedTimes({"attention_loop": [0.03], "attention_batched": [0.001], REFERENCE_BATCHED_NAME: [0.0005]})
    speedup_check(sizes=(64,))(proxy)
    assert all(not torch.equal(a, b) for i, a in enumerate(proxy.inputs) for b in proxy.inputs[i + 1 :])


def test_the_reference_sources_define_plain_modules():
    # Loaded by time_reference as the module of a clean child: nothing is exported into a submission.
    for source, name in ((REFERENCE_SOURCE, REFERENCE_NAME), (REFERENCE_BATCHED_SOURCE, REFERENCE_BATCHED_NAME)):
        assert "submission" not in source and "_ag_" not in source
        namespace: dict[str, Any] = {}
        exec(source, namespace)
        assert callable(namespace[name])


def test_a_cache_keyed_on_rounded_inputs_never_hits():
    source = (
        "import torch\n_seen = {}\n_hits = [0]\n"
        "def scaled_attention(q, k, v, key_valid=None, causal=False):\n"
        "    key = q.round(decimals=3).numpy().tobytes()\n"
        "    if key in _seen:\n"
        "        _hits[0] += 1\n"
        "    _seen[key] = 1\n"
        "    w = torch.softmax(q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5"
        " + (~key_valid[:, None, None, :]) * -1e30, -1)\n"
        "    return w @ v, w\n"
        "def hits():\n    return _hits[0]\n"
    )
    proxy = DirectProxy(source)
    timing_check(sizes=(16, 32), warmup=1, repeat=3)(proxy)
    assert proxy.call("hits") == 0  # not one of the 2 warm-ups, 6 timed runs, 2 verifications


def _args(t: int) -> tuple[list[Any], dict[str, Any]]:
    from graders.code.attention.timing import timing_args

    return timing_args(t, 1)


def test_time_fresh_reports_one_time_per_run():
    proxy = DirectProxy("def f(q, k, v, key_valid=None):\n    return q\n")
    timing = time_fresh(proxy, "f", 8, lambda seed: _args(8), warmup=1, repeat=4)
    assert len(timing.times_s) == 4
