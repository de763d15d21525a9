"""Timing against a reference timed in a clean process; only what the trusted side measures and compares counts.

- The baseline is ``student.time_reference``: the instructor's reference (jail_sources) runs in a fresh jailed
  child that never loaded student code, while the student's processes are stopped, timed exactly as ``time``
  times the student. Nothing the submission does (patching torch, wrapping names) can slow it down.
- The student's function is timed with ``student.time``, one run per call, each run on inputs drawn from a seed
  of its own (``secrets``): no two timed runs, warm-ups, re-measurements or entry points see the same inputs, so no
  cache (on identity, content, or content rounded past the proxy's noise) can answer a timed run, and the inputs
  cannot be known in advance.
- What was timed must be correct: one extra call per measurement, at a random position among the timed runs and
  indistinguishable from them in the jail, is compared with the trusted reference (``verify``), so a function
  that answers large inputs quickly with garbage fails instead of looking fast.

Only the ratio is scored, with generous thresholds so a correct solution is never failed by noise; the score uses
the fastest run of each (load on the worker only ever adds time).
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graders.code.attention.calling import as_pair, student_message
from graders.code.attention.compare import compare
from graders.code.attention.inputs import AttentionCase, generator, key_valid_mask, randn
from graders.code.attention.jail_sources import REFERENCE_NAME, REFERENCE_SOURCE
from graders.code.attention.reference import reference_attention
from graders.code.checks import CheckFailed, CheckFunc, StudentError, StudentProxy, Timing, check

# The result of a timed function at timing sizes, against the float64 reference (float32 inputs).
VERIFY_RTOL, VERIFY_ATOL = 1e-3, 1e-4

Args = tuple[list[Any], dict[str, Any]]


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


def fresh_seed() -> int:
    """A seed nobody can predict: timing inputs need no reproducibility, and must not be precomputable."""
    return secrets.randbelow(2**62)


def timing_args(t: int, seed: int) -> Args:
    """float32 self-sized inputs (B=2, H=2, D=16) with a key mask: the common path."""
    gen = generator(seed)
    q, k, v = (randn(gen, 2, 2, t, 16).float() for _ in range(3))
    return [q, k, v], {"key_valid": key_valid_mask(gen, 2, t, p_valid=0.8)}


def verify_result(student: StudentProxy, entry: str, args: list[Any], kwargs: dict[str, Any]) -> None:
    """Call ``entry`` once and compare with the trusted reference; CheckFailed when it differs or raises."""
    case = AttentionCase("timing", args[0], args[1], args[2], kwargs.get("key_valid"))
    t = case.q.shape[-2]
    try:
        result = student.call(entry, *args, **kwargs)
    except StudentError as err:
        raise CheckFailed(f"{entry} raised {student_message(err, visible=True)} at T={t}") from None
    expected_out, expected_w = reference_attention(case.q, case.k, case.v, case.key_valid)
    out, weights = as_pair(result, entry, case)
    for what, got, expected in (("weights", weights, expected_w), ("output", out, expected_out)):
        problem = compare(got, expected, rtol=VERIFY_RTOL, atol=VERIFY_ATOL, what=what)
        if problem:
            raise CheckFailed(
                f"at T={t} (one of the calls made while timing) {entry} returned wrong {what}: {problem}. Only "
                "correct results are timed."
            )


def time_fresh(
    student: StudentProxy,
    entry: str,
    t: int,
    make_args: Callable[[int], Args],
    *,
    warmup: int,
    repeat: int,
    verify: Callable[[list[Any], dict[str, Any]], None] | None = None,
) -> Timing:
    """``repeat`` timed runs of the student's ``entry`` at T = ``t``, each on inputs of a fresh seed, after ``warmup``.

    With ``verify``, one more call on fresh inputs is made at a random position among the runs and its result is
    checked by ``verify`` (which raises CheckFailed).
    """
    verify_at = secrets.randbelow(repeat + 1) if verify is not None else -1
    times: list[float] = []
    try:
        if warmup:
            args, kwargs = make_args(fresh_seed())
            student.time(entry, args, kwargs, warmup=warmup, repeat=0)
        for i in range(repeat + 1):
            if i == verify_at and verify is not None:
                verify(*make_args(fresh_seed()))
            if i < repeat:
                args, kwargs = make_args(fresh_seed())
                times.extend(student.time(entry, args, kwargs, warmup=0, repeat=1).times_s)
    except StudentError as err:
        raise CheckFailed(f"{entry} raised {student_message(err, visible=True)} while being timed (T={t})") from None
    return Timing(times)


def time_reference(
    student: StudentProxy, source: str, name: str, args: list[Any], kwargs: dict[str, Any], warmup: int, repeat: int
) -> Timing:
    """The instructor's reference, timed in a clean child (see the module docstring)."""
    return student.time_reference(source, name, args, kwargs, warmup=warmup, repeat=repeat)


def time_pair(
    student: StudentProxy, entry: str, t: int, warmup: int, repeat: int, *, verify: bool = True
) -> tuple[TimingRow, TimingRow]:
    """(medians, fastest runs) of the student's function and the reference at T = ``t``.

    The table shows medians; the score uses the fastest run of each, since load on the worker only ever adds
    time, so the fastest run is the steadiest estimate of a function's own cost.
    """

    def make_args(seed: int) -> Args:
        return timing_args(t, seed)

    def check_result(args: list[Any], kwargs: dict[str, Any]) -> None:
        verify_result(student, entry, args, kwargs)

    mine = time_fresh(
        student, entry, t, make_args, warmup=warmup, repeat=repeat, verify=check_result if verify else None
    )
    ref_args, ref_kwargs = make_args(fresh_seed())
    ref = time_reference(student, REFERENCE_SOURCE, REFERENCE_NAME, ref_args, ref_kwargs, warmup, 2 * repeat + 1)
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
    verify: bool = True,
) -> CheckFunc:
    """Build the timing check: the worst ratio to the clean-process reference over ``sizes`` is scored.

    With ``verify`` (the default) one call per measurement, made among the timed ones, must match the reference:
    a wrong function gets no timing points, so a submission cannot look fast by answering large inputs with
    garbage. Without it, timing trusts that the timed function computes attention.
    """

    @check(points=points, category="timing", visibility="visible", name=name)
    def timing(student: StudentProxy) -> str:
        """Median time over several T, relative to the reference timed the same way in a clean process."""
        measured = []
        for t in sizes:
            pair = time_pair(student, entry, t, warmup, repeat, verify=verify)
            if pair[1].ratio > full_ratio:
                # Re-measure (on new inputs) before penalising: a stall of the worker must not cost a correct
                # solution its points; the better of two attempts counts.
                again = time_pair(student, entry, t, warmup, repeat, verify=verify)
                pair = min(pair, again, key=lambda p: p[1].ratio)
            measured.append(pair)
        worst = max(best.ratio for _, best in measured)
        table = format_table([medians for medians, _ in measured])
        where = (
            f"timed on {student.device}, median of {repeat} runs on fresh inputs after {warmup} warm-up; scored on "
            "the fastest run; the reference is timed in a separate clean process"
        )
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
