"""q6: a per-query loop and a batched implementation must agree, and the batched one must be clearly faster."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from graders.code.attention.calling import call_attention
from graders.code.attention.inputs import generator, randn, random_case
from graders.code.checks import CheckFailed, CheckFunc, StudentError, StudentProxy, check


def agreement_check(
    *,
    points: float = 1.0,
    loop_entry: str = "attention_loop",
    batched_entry: str = "attention_batched",
    name: str = "loop_vs_batched",
    visibility: str = "hidden",
) -> CheckFunc:
    """Build the check that both implementations agree (torch.testing.assert_close on weights and output).

    Category "determinism": the same input must give the same result, whichever implementation computes it.
    """

    @check(points=points, category="determinism", visibility=visibility, name=name)
    def loop_vs_batched(student: StudentProxy) -> str:
        """The loop and batched versions agree on the same input (assert_close on weights and output)."""
        for case in (random_case("Tq=4, Tk=6", 91, tq=4, tk=6), random_case("Tq=Tk=7", 92, tq=7, tk=7)):
            loop = call_attention(student, loop_entry, case)
            batched = call_attention(student, batched_entry, case)
            for what, a, b in zip(("weights", "output"), loop, batched, strict=True):
                try:
                    torch.testing.assert_close(a, b)
                except AssertionError as err:
                    summary = " ".join(str(err).split())
                    raise CheckFailed(
                        f"{loop_entry} and {batched_entry} disagree on the {what} ({case.describe()}): {summary}"
                    ) from None
        return f"{loop_entry} and {batched_entry} agree on weights and outputs."

    return loop_vs_batched


@dataclass(frozen=True)
class SpeedRow:
    t: int
    loop_s: float
    batched_s: float

    @property
    def speedup(self) -> float:
        return self.loop_s / max(self.batched_s, 1e-9)


def format_speed_table(rows: list[SpeedRow], loop_entry: str, batched_entry: str) -> str:
    header = f"{'T':>5}  {loop_entry + ' ms':>20}  {batched_entry + ' ms':>23}  {'speedup':>8}"
    body = [f"{r.t:>5}  {r.loop_s * 1e3:>20.3f}  {r.batched_s * 1e3:>23.3f}  {r.speedup:>7.1f}×" for r in rows]
    return "\n".join([header, *body])


def _time(student: StudentProxy, entry: str, t: int, warmup: int, repeat: int) -> float:
    gen = generator(900 + t)
    args = [randn(gen, 1, 2, t, 16).float() for _ in range(3)]
    try:
        return student.time(entry, args, {}, warmup=warmup, repeat=repeat).median_s
    except StudentError as err:
        raise CheckFailed(f"{entry} raised {err.type_name} while being timed (T={t}): {err.message}") from None


def measure(student: StudentProxy, loop_entry: str, batched_entry: str, t: int, warmup: int, repeat: int) -> SpeedRow:
    return SpeedRow(t, _time(student, loop_entry, t, warmup, repeat), _time(student, batched_entry, t, warmup, repeat))


def speedup_check(
    *,
    points: float = 2.0,
    loop_entry: str = "attention_loop",
    batched_entry: str = "attention_batched",
    name: str = "batched_faster",
    sizes: tuple[int, ...] = (32, 128, 512),
    min_speedup: float = 3.0,
    warmup: int = 1,
    repeat: int = 3,
) -> CheckFunc:
    """Build the timing check: a table over ``sizes``; at the largest T the batched version must be faster.

    ``min_speedup`` = 3 is generous (a vectorised version is typically 30-300× faster there) yet separates a
    "batched" version that still loops in Python, whose speed-up is about 1 or less and would make a bare
    ``loop > batched`` comparison a coin flip.
    """

    @check(points=points, category="timing", visibility="visible", name=name)
    def batched_faster(student: StudentProxy) -> str:
        """Median times over several T; at the largest T the batched version is clearly faster than the loop."""
        rows = [measure(student, loop_entry, batched_entry, t, warmup, repeat) for t in sizes]
        if rows[-1].speedup < min_speedup:
            # Re-measure before penalising, so one stall of the worker cannot fail a correct pair.
            again = measure(student, loop_entry, batched_entry, sizes[-1], warmup, repeat)
            rows[-1] = max(rows[-1], again, key=lambda r: r.speedup)
        table = format_speed_table(rows, loop_entry, batched_entry)
        where = f"timed on {student.device}, median of {repeat} runs after {warmup} warm-up"
        last = rows[-1]
        if last.speedup < min_speedup:
            raise CheckFailed(
                f"at T={last.t} {batched_entry} is only {last.speedup:.1f}× faster than {loop_entry} (needs "
                f"{min_speedup:g}×; {where}). Compute all scores with one matrix product instead of a Python "
                f"loop.\n{table}"
            )
        return f"{batched_entry} is {last.speedup:.0f}× faster than {loop_entry} at T={last.t} ({where}).\n{table}"

    return batched_faster
