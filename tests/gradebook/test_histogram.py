"""The score histogram's bins: one per point for small whole maxima (full marks alone in the last), else ten."""

from __future__ import annotations

from app.gradebook.stats import histogram


def test_whole_maximum_gets_a_bin_per_point_and_one_for_full_marks() -> None:
    bins = histogram([0, 0.5, 1, 2.99, 3, 3.0000000001], 3)
    assert [(b.low, b.high, b.students) for b in bins] == [(0, 1, 2), (1, 2, 1), (2, 3, 1), (3, 3, 2)]


def test_other_maxima_get_ten_equal_bins_the_last_holding_the_maximum() -> None:
    bins = histogram([0.0, 3.7, 1.85, -1.0], 3.7)
    assert len(bins) == 10 and bins[0].students == 2 and bins[5].students == 1 and bins[-1].students == 1
    assert bins[0].low == 0 and bins[-1].high == 3.7 and sum(b.students for b in bins) == 4
    assert histogram([1.0], 0) == [] and [b.students for b in histogram([], 2)] == [0, 0, 0]
