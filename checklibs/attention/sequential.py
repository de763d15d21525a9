"""A sequential decision on medians of paired ratios: measure until the score is clear, within a bound on runs.

A timing check measures *runs*; each run gives one or more paired ratios (the student's time over a reference's,
measured back to back, so both saw the same load). What is scored is the median ratio, mapped to a score fraction
by ``Steps`` (lower is better: full points up to the first edge, then lower fractions).

Statistic: the median of the ratios, with a distribution-free confidence interval from order statistics (the sign
test): for n runs and the largest k with P(Bin(n, ½) ≤ k - 1) ≤ alpha, the true median is below x₍ₖ₎ with
probability at most alpha, and above x₍ₙ₊₁₋ₖ₎ with probability at most alpha. Nothing is assumed about the
distribution of the times, so stalls (a run that was preempted) widen the interval instead of moving it.

Decision rule (``decide``): after ``Plan.first`` runs, then every ``Plan.step`` more up to ``Plan.most``, the score
is decided as soon as the intervals of all ratios lie inside one step each (or one of them lies inside the step
worth nothing: nothing else can raise the score then). A series that reaches ``most`` runs while an interval still
straddles an edge sits on that edge: it is measured again, on fresh runs (a burst of load during one series does not
decide). If the second series is undecided too, the score is the better end of either series' interval: the benefit
of the doubt, so a correct solution is never failed by noise. At most ``2 * most`` runs are made.

Pure arithmetic: nothing here times anything, so it can be tested with made-up numbers.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Sample = tuple[float, ...]  # the paired ratios of one run, one per statistic


def binomial_half_cdf(k: int, n: int) -> float:
    """P(X ≤ k) for X ~ Bin(n, ½)."""
    return sum(math.comb(n, i) for i in range(0, k + 1)) / 2**n if k >= 0 else 0.0


def order_rank(n: int, alpha: float) -> int | None:
    """The largest k ≥ 1 with P(Bin(n, ½) ≤ k - 1) ≤ alpha, or None when even k = 1 is too wide (n too small)."""
    best = None
    for k in range(1, (n + 1) // 2 + 1):
        if binomial_half_cdf(k - 1, n) > alpha:
            break
        best = k
    return best


def median_bounds(values: Sequence[float], alpha: float) -> tuple[float, float]:
    """A confidence interval of the median of ``values``: each side is wrong with probability at most ``alpha``."""
    k = order_rank(len(values), alpha)
    if k is None:
        return -math.inf, math.inf
    ordered = sorted(values)
    return ordered[k - 1], ordered[len(ordered) - k]


@dataclass(frozen=True)
class Steps:
    """Score fractions by a lower-is-better ratio: ``fractions[i]`` up to ``edges[i]``, the last one beyond."""

    edges: tuple[float, ...]
    fractions: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.fractions) != len(self.edges) + 1 or not self.edges:
            raise ValueError("Steps needs one more fraction than edges, and at least one edge")
        if list(self.edges) != sorted(set(self.edges)) or list(self.fractions) != sorted(self.fractions, reverse=True):
            raise ValueError("edges must rise and fractions fall")

    def fraction(self, ratio: float) -> float:
        """The score fraction of a ratio; a ratio exactly on an edge gets the better side."""
        return self.fractions[bisect.bisect_left(self.edges, ratio)]


@dataclass(frozen=True)
class Plan:
    """When to look: after ``first`` runs, then every ``step`` more, never beyond ``most`` runs per series."""

    first: int = 5
    step: int = 4
    most: int = 13
    alpha: float = 0.05  # one-sided, per side of each interval, per look

    def __post_init__(self) -> None:
        if not 1 <= self.first <= self.most or self.step < 1 or not 0 < self.alpha < 0.5:
            raise ValueError("need 1 <= first <= most, step >= 1 and 0 < alpha < 0.5")

    def looks(self) -> list[int]:
        """The numbers of runs after which the decision is looked at."""
        found = list(range(self.first, self.most + 1, self.step))
        return found if found[-1] == self.most else [*found, self.most]


@dataclass(frozen=True)
class Series:
    """One series of runs and what it allowed: the score lies in [low, high]; decided when they are equal."""

    samples: tuple[Sample, ...]
    low: float
    high: float
    bounds: tuple[tuple[float, float], ...]  # per statistic, the interval of its median

    @property
    def decided(self) -> bool:
        return self.low == self.high

    def medians(self) -> tuple[float, ...]:
        return tuple(statistics.median(s[j] for s in self.samples) for j in range(len(self.bounds)))


@dataclass(frozen=True)
class Outcome:
    """The decision: the score fraction, whether it was clear, and the series measured (two when re-measured)."""

    fraction: float
    decided: bool
    series: tuple[Series, ...] = field(default_factory=tuple)

    @property
    def runs(self) -> int:
        return sum(len(s.samples) for s in self.series)

    @property
    def last(self) -> Series:
        return self.series[-1]


def judge(samples: Sequence[Sample], steps: Sequence[Steps], alpha: float) -> Series:
    """What ``samples`` allow: the lowest and highest score fraction consistent with every median's interval.

    The score is the lowest fraction over the statistics (each must be good enough), so one statistic clearly in
    its lowest step decides alone.
    """
    bounds = tuple(median_bounds([s[j] for s in samples], alpha) for j in range(len(steps)))
    best = [step.fraction(lo) for step, (lo, _) in zip(steps, bounds, strict=True)]
    worst = [step.fraction(hi) for step, (_, hi) in zip(steps, bounds, strict=True)]
    return Series(tuple(samples), min(worst), min(best), bounds)


def run_series(measure: Callable[[int], Sequence[Sample]], steps: Sequence[Steps], plan: Plan) -> Series:
    """Measure (``measure(n)`` makes n more runs) and look after each look of ``plan`` until decided or ``most``."""
    samples: list[Sample] = []
    series = None
    for look in plan.looks():
        new = list(measure(look - len(samples)))
        if len(new) != look - len(samples) or any(len(s) != len(steps) for s in new):
            raise ValueError("measure(n) must return n samples of one ratio per statistic")
        samples += new
        series = judge(samples, steps, plan.alpha)
        if series.decided:
            return series
    assert series is not None
    return series


def decide(measure: Callable[[int], Sequence[Sample]], steps: Sequence[Steps], plan: Plan) -> Outcome:
    """The score fraction of the median ratios (see the module docstring): at most two series of ``plan.most``."""
    first = run_series(measure, steps, plan)
    if first.decided:
        return Outcome(first.low, True, (first,))
    second = run_series(measure, steps, plan)  # on an edge: measure again, on fresh runs
    if second.decided:
        return Outcome(second.low, True, (first, second))
    return Outcome(max(first.high, second.high), False, (first, second))
