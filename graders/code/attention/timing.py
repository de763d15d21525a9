"""Timing against the reference, both timed through the jail on the same worker at the same time.

The reference is ``define()``d inside the jail and timed by the same proxy call as the student's function, so
both pay the same RPC, copying and (on CUDA) synchronisation costs; only the ratio is scored, with generous
thresholds so a correct solution is never failed by noise. Known limit: the reference runs beside the student's
code, so a student who monkeypatches torch could slow it down; the thresholds only separate orders of magnitude.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from graders.code.attention.inputs import generator, key_valid_mask, randn
from graders.code.attention.jail_sources import REFERENCE_NAME, REFERENCE_SOURCE
from graders.code.checks import CheckFailed, CheckFunc, StudentError, StudentProxy, check


@dataclass(frozen=True)
class TimingRow:
    t: int
    student_s: float
    reference_s: float

    @property
    def ratio(self) -> float:
        return self.student_s / max(self.reference_s, 1e-9)


def format_table(rows: list[TimingRow], student_label: str = "yours", reference_label: str = "reference") -> str:
    """An aligned text table: T, student ms, reference ms, ratio."""
    header = f"{'T':>5}  {student_label + ' ms':>12}  {reference_label + ' ms':>14}  {'ratio':>7}"
    lines = [header] + [
        f"{r.t:>5}  {r.student_s * 1e3:>12.3f}  {r.reference_s * 1e3:>14.3f}  {r.ratio:>6.1f}×" for r in rows
    ]
    return "\n".join(lines)


def ratio_score(ratio: float, full_ratio: float, zero_ratio: float) -> float:
    """1 up to ``full_ratio``× the reference, 0 from ``zero_ratio``×, log-linear in between."""
    if ratio <= full_ratio:
        return 1.0
    if ratio >= zero_ratio:
        return 0.0
    return 1.0 - math.log(ratio / full_ratio) / math.log(zero_ratio / full_ratio)


def timing_args(t: int, seed: int) -> tuple[list[Any], dict[str, Any]]:
    """float32 self-sized inputs (B=2, H=2, D=16) with a key mask: the common path."""
    gen = generator(seed)
    q, k, v = (randn(gen, 2, 2, t, 16).float() for _ in range(3))
    return [q, k, v], {"key_valid": key_valid_mask(gen, 2, t, p_valid=0.8)}


def time_pair(
    student: StudentProxy, entry: str, reference: str, args: list[Any], kwargs: dict[str, Any], warmup: int, repeat: int
) -> tuple[TimingRow, TimingRow]:
    """(medians, fastest runs) of the student's function and the reference on the same inputs.

    The table shows medians; the score uses the fastest run of each, since load on the worker only ever adds
    time, so the fastest run is the steadiest estimate of a function's own cost.
    """
    t = args[0].shape[-2]
    try:
        mine = student.time(entry, args, kwargs, warmup=warmup, repeat=repeat)
    except StudentError as err:
        raise CheckFailed(f"{entry} raised {err.type_name} while being timed: {err.message}") from None
    ref = student.time(reference, args, kwargs, warmup=warmup, repeat=repeat)
    return TimingRow(t, mine.median_s, ref.median_s), TimingRow(t, min(mine.times_s), min(ref.times_s))


def timing_check(
    *,
    points: float = 1.0,
    entry: str = "scaled_attention",
    name: str = "timing",
    sizes: tuple[int, ...] = (32, 128, 256),
    full_ratio: float = 20.0,
    zero_ratio: float = 100.0,
    warmup: int = 1,
    repeat: int = 3,
) -> CheckFunc:
    """Build the timing check: the worst ratio to the in-jail reference over ``sizes`` is scored."""

    @check(points=points, category="timing", visibility="visible", name=name)
    def timing(student: StudentProxy) -> str:
        """Median time over several T, relative to the reference timed the same way on the same worker."""
        student.define(REFERENCE_SOURCE)
        measured = []
        for t in sizes:
            args, kwargs = timing_args(t, 80 + t)
            pair = time_pair(student, entry, REFERENCE_NAME, args, kwargs, warmup, repeat)
            if pair[1].ratio > full_ratio:
                # Re-measure before penalising: a stall of the worker must not cost a correct solution its
                # points; the better of two attempts counts.
                again = time_pair(student, entry, REFERENCE_NAME, args, kwargs, warmup, repeat)
                pair = min(pair, again, key=lambda p: p[1].ratio)
            measured.append(pair)
        worst = max(best.ratio for _, best in measured)
        table = format_table([medians for medians, _ in measured])
        where = f"timed on {student.device}, median of {repeat} runs after {warmup} warm-up; scored on the fastest run"
        fraction = ratio_score(worst, full_ratio, zero_ratio)
        if fraction < 1.0:
            raise CheckFailed(
                f"your function is {worst:.0f}× slower than the reference at worst (full points up to "
                f"{full_ratio:g}×, none from {zero_ratio:g}×); {where}.\n{table}\nAvoid Python loops over "
                "queries or keys: compute all scores with one matrix product.",
                score_fraction=fraction,
            )
        return f"Within {full_ratio:g}× of the reference ({where}).\n{table}"

    return timing
