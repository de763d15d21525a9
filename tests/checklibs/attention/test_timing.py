"""The timing checks: the sequential statistic, scoring, verification of every call, and the defences.

Nothing here asserts how long anything takes: the statistic is fed made-up ratios, the checks get a proxy that
reports scripted times, and where real code is timed (DirectProxy) only what was called and verified is asserted.
"""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from checklibs.attention.jail_sources import (
    REFERENCE_BATCHED_NAME,
    REFERENCE_BATCHED_SOURCE,
    REFERENCE_NAME,
    REFERENCE_SOURCE,
)
from checklibs.attention.loop_vs_batched import speedup_check
from checklibs.attention.reference import reference_attention
from checklibs.attention.sequential import (
    Plan,
    Steps,
    binomial_half_cdf,
    decide,
    median_bounds,
    order_rank,
)
from checklibs.attention.timing import timing_check
from graders.code.checks import CheckFailed, TimedCall
from tests.checklibs.attention.direct_proxy import DirectProxy

PLAN = Plan(first=5, step=4, most=13)
Q5_STEPS = Steps((3.0, 12.0), (1.0, 0.5, 0.0))


# --- the statistic -------------------------------------------------------------------------------------------------


def test_median_bounds_are_order_statistics_within_alpha():
    assert median_bounds([5, 1, 4, 2, 3], 0.05) == (1, 5)  # n = 5: min and max (each side wrong w.p. 1/32)
    assert median_bounds(list(range(1, 10)), 0.05) == (2, 8)
    assert median_bounds([1, 2, 3, 4], 0.05) == (-math.inf, math.inf)  # 1/16 > alpha: no interval yet
    for n in range(5, 60):
        k = order_rank(n, 0.05)
        assert k is not None
        assert binomial_half_cdf(k - 1, n) <= 0.05 < binomial_half_cdf(k, n)


def test_steps_give_the_better_side_on_an_edge():
    assert [Q5_STEPS.fraction(r) for r in (1.0, 3.0, 3.01, 12.0, 12.5)] == [1.0, 1.0, 0.5, 0.5, 0.0]
    with pytest.raises(ValueError):
        Steps((3.0, 2.0), (1.0, 0.5, 0.0))
    with pytest.raises(ValueError):
        Steps((3.0,), (1.0, 0.5, 0.0))


class FakeSource:
    """A made-up timing source: ``ratio(i)`` is the paired ratio of run i; records the batch sizes asked for."""

    def __init__(self, ratio: Callable[[int], float]) -> None:
        self.ratio, self.runs, self.batches = ratio, 0, []

    def __call__(self, n: int) -> list[tuple[float, ...]]:
        self.batches.append(n)
        out = [(self.ratio(self.runs + i),) for i in range(n)]
        self.runs += n
        return out


def noisy(median: float, seed: int, spread: float = 0.15) -> Callable[[int], float]:
    rng = random.Random(seed)
    return lambda i: median * math.exp(rng.gauss(0.0, spread))


@pytest.mark.parametrize(("median", "fraction"), [(1.1, 1.0), (6.0, 0.5), (50.0, 0.0)])
def test_a_clear_ratio_is_decided_after_the_first_runs(median, fraction):
    source = FakeSource(noisy(median, seed=1))
    outcome = decide(source, [Q5_STEPS], PLAN)
    assert (outcome.fraction, outcome.decided, outcome.runs, source.batches) == (fraction, True, 5, [5])


def test_stalls_widen_the_interval_but_do_not_move_the_median():
    stalls = {2, 7}  # two runs of 13 preempted: 50× slower
    source = FakeSource(lambda i: 50.0 if i in stalls else 1.2)
    outcome = decide(source, [Q5_STEPS], PLAN)
    assert outcome.decided and outcome.fraction == 1.0
    assert source.batches == [5, 4, 4]  # undecided after 5 and 9 runs (a stall is the interval's end), then clear


def test_a_ratio_on_an_edge_is_re_measured_then_gets_the_benefit_of_the_doubt():
    source = FakeSource(lambda i: 2.9 if i % 2 else 3.1)
    outcome = decide(source, [Q5_STEPS], PLAN)
    assert not outcome.decided and outcome.fraction == 1.0
    assert len(outcome.series) == 2 and outcome.runs == 2 * PLAN.most  # the bound on the number of runs
    assert source.batches == [5, 4, 4, 5, 4, 4]


def test_a_burst_of_load_during_one_series_does_not_decide():
    # The whole first series is disturbed (half its runs stalled); the re-measurement is clean.
    source = FakeSource(lambda i: (40.0 if i % 2 else 1.1) if i < PLAN.most else 1.1)
    outcome = decide(source, [Q5_STEPS], PLAN)
    assert outcome.decided and outcome.fraction == 1.0 and len(outcome.series) == 2


def test_one_statistic_clearly_worth_nothing_decides_alone():
    steps = [Steps((1 / 3,), (1.0, 0.0)), Steps((4.0,), (1.0, 0.0))]
    batches: list[int] = []

    def source(n: int) -> list[tuple[float, ...]]:
        batches.append(n)
        return [(0.33 if i % 2 else 0.34, 20.0) for i in range(n)]  # speed-up on its edge, ratio clearly too slow

    outcome = decide(source, steps, PLAN)
    assert (outcome.fraction, outcome.decided, batches) == (0.0, True, [5])


def test_the_number_of_runs_is_bounded_and_far_ratios_are_never_misjudged():
    for seed in range(300):
        rng = random.Random(seed)
        median = rng.choice([1.0, 1.5, 6.0, 30.0, 2.9, 3.1, 11.0, 13.0])
        spread = rng.choice([0.05, 0.3, 0.8])
        stall = rng.choice([0.0, 0.1, 0.3])

        def ratio(i: int, rng: random.Random = rng, median: float = median, spread: float = spread) -> float:
            value = median * math.exp(rng.gauss(0.0, spread))
            return value * 50 if rng.random() < stall else value

        source = FakeSource(ratio)
        outcome = decide(source, [Q5_STEPS], PLAN)
        assert outcome.runs <= 2 * PLAN.most and outcome.runs == source.runs
        if spread <= 0.3 and stall <= 0.1 and median in (1.0, 1.5, 6.0, 30.0):  # at least 2× from every edge
            assert outcome.fraction == Q5_STEPS.fraction(median), (seed, median, spread, stall, outcome)


# --- the checks, on a proxy with scripted times ---------------------------------------------------------------------


class ScriptedTimes:
    """A proxy whose timing session reports scripted seconds and answers with the trusted reference.

    ``seconds[name](i)`` is the time of the i-th call of ``name`` (the reference under its function's name). The
    student's results are computed on demand, when the check asks for them (``wrong_at``: the call indices whose
    result is wrong), and every event is logged: ("call", name, i), ("reference", i) and ("result", name, i).
    It has no call(), time() or define(): the timing checks must go through the session alone.
    """

    device = "cpu"

    def __init__(
        self,
        seconds: dict[str, Callable[[int], float]],
        *,
        wrong_at: set[int] = frozenset(),
        walls: dict[str, float] | None = None,
    ) -> None:
        self.seconds, self.wrong_at = seconds, set(wrong_at)
        self.walls = walls or {}  # a call's wall time, where it is not its work (a sleep, or load)
        self.counts: dict[str, int] = {}
        self.events: list[tuple[Any, ...]] = []
        self.inputs: list[torch.Tensor] = []
        self.references: list[str] = []
        self.student_calls = 0

    def _next(self, name: str) -> float:
        i = self.counts.get(name, 0)
        self.counts[name] = i + 1
        return self.seconds[name](i)

    @contextlib.contextmanager
    def timing_session(self, source: str, name: str) -> Iterator[ScriptedSession]:
        assert f"def {name}(" in source
        self.references.append(name)
        yield ScriptedSession(self, name)


class ScriptedSession:
    def __init__(self, proxy: ScriptedTimes, name: str) -> None:
        self.proxy, self.name = proxy, name

    def student(self, name: str, args: list[Any], kwargs: dict[str, Any] | None = None) -> TimedCall:
        proxy = self.proxy
        index = proxy.student_calls
        proxy.student_calls += 1
        proxy.inputs.append(args[0])
        proxy.events.append(("call", name, index))

        def result() -> Any:
            proxy.events.append(("result", name, index))
            out, weights = reference_attention(*args, **(kwargs or {}))
            if index in proxy.wrong_at:
                return out.float() + 1, weights.float()
            return out.float(), weights.float()

        work = proxy._next(name)
        return TimedCall(work, result, proxy.walls.get(name, work))

    def reference(self, args: list[Any], kwargs: dict[str, Any] | None = None) -> float:
        self.proxy.events.append(("reference", self.proxy.counts.get(self.name, 0)))
        return self.proxy._next(self.name)


def const(seconds: float) -> Callable[[int], float]:
    return lambda i: seconds


def test_a_function_within_the_full_ratio_gets_full_points_and_a_table():
    proxy = ScriptedTimes({"scaled_attention": const(0.002), REFERENCE_NAME: const(0.001)})
    feedback = timing_check(sizes=(16, 32))(proxy)
    assert "Within 3×" in feedback and "yours ms" in feedback and "2.0×" in feedback
    assert "all 12 results were checked" in feedback  # 2 sizes × (1 warm-up + 5 runs)
    assert proxy.references == [REFERENCE_NAME]  # one clean reference child for the whole check


@pytest.mark.parametrize(("seconds", "fraction"), [(0.006, 0.5), (0.05, 0.0)])
def test_a_slow_function_gets_the_fraction_of_its_band(seconds, fraction):
    proxy = ScriptedTimes({"scaled_attention": const(seconds), REFERENCE_NAME: const(0.001)})
    with pytest.raises(CheckFailed) as failed:
        timing_check(sizes=(16, 32))(proxy)
    assert failed.value.score_fraction == fraction
    assert f"{seconds / 0.001:.1f}× slower" in failed.value.feedback
    if fraction == 0.0:  # nothing can raise the score: the larger size is not measured
        assert "larger T were not measured" in failed.value.feedback and proxy.student_calls == 6


def test_every_call_gets_inputs_of_its_own():
    proxy = ScriptedTimes({"scaled_attention": const(0.002), REFERENCE_NAME: const(0.001)})
    timing_check(sizes=(16, 32))(proxy)
    assert len(proxy.inputs) == 12
    assert all(not torch.equal(a, b) for i, a in enumerate(proxy.inputs) for b in proxy.inputs[i + 1 :])


def test_runs_alternate_the_order_of_student_and_reference():
    proxy = ScriptedTimes({"scaled_attention": const(0.002), REFERENCE_NAME: const(0.001)})
    timing_check(sizes=(16,))(proxy)
    order = [e[0] for e in proxy.events if e[0] != "result"]
    assert order[:6] == ["call", "reference", "reference", "call", "call", "reference"]


def test_results_are_compared_only_after_the_last_call_of_their_batch():
    # By construction: between two calls the trusted side looks at no result, so no call can be told apart.
    proxy = ScriptedTimes({"scaled_attention": lambda i: 0.002 if i % 3 else 0.03, REFERENCE_NAME: const(0.001)})
    with contextlib.suppress(CheckFailed):
        timing_check(sizes=(16, 32))(proxy)
    groups: list[tuple[str, list[int]]] = []
    for event in proxy.events:
        kind = "result" if event[0] == "result" else "calls"
        if kind == "calls" and event[0] == "reference":
            continue
        if not groups or groups[-1][0] != kind:
            groups.append((kind, []))
        groups[-1][1].append(event[2])
    assert [kind for kind, _ in groups] == ["calls", "result"] * (len(groups) // 2)
    for (_, called), (_, checked) in zip(groups[::2], groups[1::2], strict=True):
        assert checked == called  # every call of the batch, and only those, verified after the batch
    assert sum(len(ids) for kind, ids in groups if kind == "result") == proxy.student_calls


def test_a_sleep_in_the_loop_version_earns_no_speed_up_points():
    # Issue 23, q6: the loop version is the batched one plus a sleep, 10 ms of wall time per call for 0.4 ms of work.
    work = {"attention_loop": const(0.0004), "attention_batched": const(0.0004), REFERENCE_BATCHED_NAME: const(0.0003)}
    proxy = ScriptedTimes(work, walls={"attention_loop": 0.01})
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(16, 64))(proxy)
    assert "only 1.0× faster than the loop" in str(failed.value)
    assert "took far longer than their CPU time (a sleep, or load on the machine)" in str(failed.value)


def test_waiting_beside_load_loses_no_timing_point():
    # Every call of the student waits 100× its work (descheduled beside a busy process): only the work counts.
    proxy = ScriptedTimes(
        {"scaled_attention": const(0.002), REFERENCE_NAME: const(0.001)}, walls={"scaled_attention": 0.2}
    )
    feedback = timing_check(sizes=(16, 32))(proxy)
    assert "Within 3×" in feedback and "12 of your calls took far longer than their CPU time" in feedback


def test_a_fast_but_wrong_function_gets_no_timing_points():
    proxy = ScriptedTimes({"scaled_attention": const(0.0001), REFERENCE_NAME: const(0.001)}, wrong_at={3})
    with pytest.raises(CheckFailed) as failed:
        timing_check(sizes=(16,))(proxy)
    assert failed.value.score_fraction == 0.0
    assert "one of the calls made while timing" in failed.value.feedback
    assert "returned wrong output" in failed.value.feedback
    assert "every timed call is checked" in failed.value.feedback


def test_the_batched_version_must_be_several_times_faster_than_the_loop():
    ref = REFERENCE_BATCHED_NAME
    fast = ScriptedTimes({"attention_loop": const(0.03), "attention_batched": const(0.001), ref: const(0.0005)})
    feedback = speedup_check(sizes=(8, 256))(fast)
    assert "30× faster" in feedback and "2.0× the reference" in feedback
    slow = ScriptedTimes({"attention_loop": const(0.03), "attention_batched": const(0.02), ref: const(0.01)})
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(8, 256))(slow)
    assert "only 1.5× faster than the loop" in failed.value.feedback
    assert "slower than a matrix-product reference" not in failed.value.feedback


def test_a_batched_version_far_slower_than_one_matrix_product_fails():
    # A heavy loop can make a looping "batched" version look fast; the reference exposes it.
    proxy = ScriptedTimes(
        {"attention_loop": const(0.5), "attention_batched": const(0.004), REFERENCE_BATCHED_NAME: const(0.0005)}
    )
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(256,))(proxy)
    assert "8.0× slower than a matrix-product reference (allowed 4×)" in failed.value.feedback


def test_loop_and_batched_never_see_the_same_inputs_and_both_are_verified():
    proxy = ScriptedTimes(
        {"attention_loop": const(0.03), "attention_batched": const(0.001), REFERENCE_BATCHED_NAME: const(0.0005)}
    )
    feedback = speedup_check(sizes=(16, 64))(proxy)
    assert all(not torch.equal(a, b) for i, a in enumerate(proxy.inputs) for b in proxy.inputs[i + 1 :])
    checked = {(e[1], e[2]) for e in proxy.events if e[0] == "result"}
    assert len(checked) == proxy.student_calls == 2 * (1 + 2) + 2 * (1 + 5)  # table_runs=2, then 5 to decide
    assert f"all {proxy.student_calls} results were checked" in feedback


@pytest.mark.parametrize("entry", ["attention_loop", "attention_batched"])
def test_a_wrong_result_of_either_version_fails_the_speed_up_check(entry):
    seconds = {"attention_loop": const(0.03), "attention_batched": const(0.001), REFERENCE_BATCHED_NAME: const(5e-4)}
    probe = ScriptedTimes(seconds)
    speedup_check(sizes=(16,))(probe)
    wrong = [i for e, name, i in (ev for ev in probe.events if ev[0] == "call") if name == entry][-1]
    proxy = ScriptedTimes(seconds, wrong_at={wrong})
    with pytest.raises(CheckFailed) as failed:
        speedup_check(sizes=(16,))(proxy)
    assert f"{entry} returned wrong output" in failed.value.feedback


# --- real code, in-process: what is called and verified (never how long it takes) ----------------------------------

ATTENTION = """
import torch

_calls = [0]
BAD_AT = {bad_at}


def scaled_attention(q, k, v, key_valid=None, causal=False):
    call = _calls[0]
    _calls[0] += 1
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    allowed = key_valid[:, None, None, :]
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0.0)
    out = weights @ v
    if call == BAD_AT:
        return out * 0, weights  # garbage, instantly: the only wrong answer among all the calls
    return out, weights


def calls():
    return _calls[0]
"""
SMALL = {"sizes": (16, 32), "plan": Plan(first=5, step=4, most=9)}
SMALL_CALLS = 2 * (1 + 5)  # the fewest calls the check makes: 2 sizes, one warm-up and 5 runs each


@pytest.mark.parametrize("bad_at", range(SMALL_CALLS))
def test_garbage_on_any_one_call_loses_all_timing_points(bad_at):
    proxy = DirectProxy(ATTENTION.format(bad_at=bad_at))
    with pytest.raises(CheckFailed) as failed:
        timing_check(**SMALL)(proxy)
    assert failed.value.score_fraction == 0.0
    assert "one of the calls made while timing" in failed.value.feedback


def test_garbage_on_one_call_in_n_at_random_loses_all_timing_points():
    for _ in range(5):
        proxy = DirectProxy(ATTENTION.format(bad_at=random.randrange(SMALL_CALLS)))
        with pytest.raises(CheckFailed) as failed:
            timing_check(**SMALL)(proxy)
        assert failed.value.score_fraction == 0.0


def test_a_correct_function_is_verified_on_every_call():
    proxy = DirectProxy(ATTENTION.format(bad_at=-1))
    try:
        feedback = timing_check(**SMALL)(proxy)
    except CheckFailed as failed:  # the ratio is measured: on a busy machine it may land anywhere
        feedback = failed.feedback
    assert f"all {proxy.call('calls')} results were checked" in feedback


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
    with contextlib.suppress(CheckFailed):
        timing_check(**SMALL)(proxy)
    assert proxy.call("hits") == 0


def test_the_reference_sources_define_plain_modules():
    # Loaded by timing_session as the module of a clean child: nothing is exported into a submission.
    for source, name in ((REFERENCE_SOURCE, REFERENCE_NAME), (REFERENCE_BATCHED_SOURCE, REFERENCE_BATCHED_NAME)):
        assert "submission" not in source and "_ag_" not in source
        namespace: dict[str, Any] = {}
        exec(source, namespace)
        assert callable(namespace[name])
