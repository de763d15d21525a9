"""q6: a per-query loop and a batched implementation must agree, and the batched one must be clearly faster."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

import torch

from checklibs.attention.basic import attention_probe, gate, no_probe
from checklibs.attention.calling import call_attention, is_visible
from checklibs.attention.compare import compare
from checklibs.attention.inputs import AttentionCase, generator, randn, random_case
from checklibs.attention.jail_sources import REFERENCE_BATCHED_NAME, REFERENCE_BATCHED_SOURCE
from checklibs.attention.sequential import Plan, Sample, Steps, decide
from checklibs.attention.timing import PLAN, Args, Expected, VerifiedCalls, fresh_seed, one_thread
from graders.code.check_api import CheckFailed, CheckFunc, StudentProxy, check


def agreement_check(
    *,
    points: float = 1.0,
    loop_entry: str = "attention_loop",
    batched_entry: str = "attention_batched",
    name: str = "loop_vs_batched",
    visibility: str = "hidden",
    basic: bool = True,
) -> CheckFunc:
    """Build the check that both implementations agree (torch.testing.assert_close on weights and output).

    Category "determinism": the same input must give the same result, whichever implementation computes it.
    With ``basic`` (the default) the points need both functions correct on a basic case first (basic.gate): two
    functions that return zeros agree too.
    """

    visible = is_visible(visibility)
    probe = attention_probe(loop_entry, batched_entry, visible=visible) if basic else no_probe

    @check(points=points, category="determinism", visibility=visibility, name=name)
    def loop_vs_batched(student: StudentProxy) -> str | None:
        """The loop and batched versions agree on the same input (assert_close on weights and output)."""
        return gate(student, probe, lambda: _agree(student, loop_entry, batched_entry, visible))

    return loop_vs_batched


def _agree(student: StudentProxy, loop_entry: str, batched_entry: str, visible: bool) -> str:
    for case in (random_case("Tq=4, Tk=6", 91, tq=4, tk=6), random_case("Tq=Tk=7", 92, tq=7, tk=7)):
        loop = call_attention(student, loop_entry, case, visible=visible)
        batched = call_attention(student, batched_entry, case, visible=visible)
        for what, a, b in zip(("output", "weights"), loop, batched, strict=True):  # call_attention: (out, weights)
            try:
                torch.testing.assert_close(a, b)
            except AssertionError as err:
                # assert_close's text quotes the greatest difference and its index, which the student's outputs
                # decide: a hidden check reports them as compare() does, as orders of magnitude.
                summary = " ".join(str(err).split()) if visible else _hidden_difference(a, b, what)
                raise CheckFailed(
                    f"{loop_entry} and {batched_entry} disagree on the {what} ({case.describe()}): {summary}"
                ) from None
    return f"{loop_entry} and {batched_entry} agree on weights and outputs."


def _hidden_difference(a: torch.Tensor, b: torch.Tensor, what: str) -> str:
    rtol, atol = (1e-7, 1e-7) if torch.float64 in (a.dtype, b.dtype) else (1.3e-6, 1e-5)  # assert_close's defaults
    found = compare(a, b, rtol=rtol, atol=atol, what=f"the loop's {what}", against="the batched one")
    return found or "they differ beyond torch.testing.assert_close's default tolerance"


@dataclass(frozen=True)
class SpeedRow:
    """Medians at one T: the times of each version and of the reference, the median speed-up and ratio."""

    t: int
    loop_s: float
    batched_s: float
    reference_s: float
    speedup: float  # median over runs of loop time / batched time
    ratio: float  # median over runs of batched time / reference time (the reference in a clean process)
    runs: int


def format_speed_table(rows: list[SpeedRow], loop_entry: str, batched_entry: str) -> str:
    header = (
        f"{'T':>5}  {loop_entry + ' ms':>20}  {batched_entry + ' ms':>23}  {'reference ms':>12}  "
        f"{'speed-up':>8}  {'vs ref':>7}  {'runs':>4}"
    )
    body = [
        f"{r.t:>5}  {r.loop_s * 1e3:>20.3f}  {r.batched_s * 1e3:>23.3f}  {r.reference_s * 1e3:>12.3f}  "
        f"{r.speedup:>7.1f}×  {r.ratio:>6.1f}×  {r.runs:>4}"
        for r in rows
    ]
    return "\n".join([header, *body])


def speed_args(t: int, seed: int) -> Args:
    """float32 inputs (B=1, H=2, D=16), no masks: q6's functions take only q, k, v."""
    gen = generator(seed)
    return [randn(gen, 1, 2, t, 16).float() for _ in range(3)], {}


def speed_case(t: int, seed: int) -> AttentionCase:
    (q, k, v), _ = speed_args(t, seed)
    return AttentionCase(f"T={t}", q, k, v)


@dataclass
class TripletRuns:
    """The runs of one size: the loop, the batched version and the reference, back to back, every call verified.

    Each run calls the loop and the batched version on inputs of their own (neither can answer from what the other
    computed) and the reference on the batched version's inputs, in the order loop, batched, reference and then
    the other way round, so the batched call always sits between the two it is compared with. Called with n, it
    makes n more runs as one batch (plus one warm-up run before the first, not counted): reference results first,
    then the calls, then the verification of every result (timing.VerifiedCalls), then per run the two ratios
    (batched / loop, batched / reference).
    """

    calls: VerifiedCalls
    loop_entry: str
    batched_entry: str
    t: int
    times: list[tuple[float, float, float]] = field(default_factory=list)
    warmed_up: bool = False
    _flip: bool = False

    def __call__(self, n: int) -> list[Sample]:
        count = n + (not self.warmed_up)
        with one_thread():
            cases = [(speed_case(self.t, fresh_seed()), speed_case(self.t, fresh_seed())) for _ in range(count)]
            expected = [(VerifiedCalls.expect(a), VerifiedCalls.expect(b)) for a, b in cases]  # ahead of the calls
        runs = [self._run(a, b, want) for (a, b), want in zip(cases, expected, strict=True)]
        with one_thread():
            self.calls.verify()
        if not self.warmed_up:
            self.warmed_up, runs = True, runs[1:]
        self.times += runs
        return [(batched / max(loop, 1e-9), batched / max(ref, 1e-9)) for loop, batched, ref in runs]

    def _run(
        self, loop_case: AttentionCase, batched_case: AttentionCase, expected: tuple[Expected, Expected]
    ) -> tuple[float, float, float]:
        session, calls = self.calls.session, self.calls
        self._flip = not self._flip
        if self._flip:
            loop = calls.call(self.loop_entry, loop_case, expected[0])
            batched = calls.call(self.batched_entry, batched_case, expected[1])
            return loop, batched, session.reference(batched_case.args, batched_case.kwargs)
        ref = session.reference(batched_case.args, batched_case.kwargs)
        batched = calls.call(self.batched_entry, batched_case, expected[1])
        return calls.call(self.loop_entry, loop_case, expected[0]), batched, ref

    def row(self) -> SpeedRow:
        loop, batched, ref = (statistics.median(x[i] for x in self.times) for i in range(3))
        speedup = statistics.median(lo / max(b, 1e-9) for lo, b, _ in self.times)
        ratio = statistics.median(b / max(r, 1e-9) for _, b, r in self.times)
        return SpeedRow(self.t, loop, batched, ref, speedup, ratio, len(self.times))


def speedup_check(
    *,
    points: float = 2.0,
    loop_entry: str = "attention_loop",
    batched_entry: str = "attention_batched",
    name: str = "batched_faster",
    sizes: tuple[int, ...] = (32, 128, 256),
    min_speedup: float = 3.0,
    max_ratio: float = 4.0,
    table_runs: int = 2,
    plan: Plan = PLAN,
) -> CheckFunc:
    """Build the timing check: a table over ``sizes``; at the largest T the batched version must be fast.

    Fast means both, as medians over paired runs: ``min_speedup``× faster than the student's own loop, and within
    ``max_ratio``× of a matrix-product reference timed in a clean process beside it (``timing_session``). A
    "batched" version that still loops over queries in Python pays ~10 µs of interpreter overhead per query: at
    T ≈ 256 that dominates (5-10× the reference), while a vectorised version is 1-2× the reference. At much larger T
    the T² elementwise work of a hand-written softmax narrows the gap, so the decision is taken at a moderate
    largest T (256 by default), where the margins are wide on both sides; it is sequential (timing.sequential):
    measured until both medians are clearly on one side of their limits, re-measured on an edge. The smaller sizes
    get ``table_runs`` runs for the table only. Every call of either version made while timing is verified against
    the reference (timing.VerifiedCalls): only correct results are timed.
    """
    steps = [Steps((1.0 / min_speedup,), (1.0, 0.0)), Steps((max_ratio,), (1.0, 0.0))]

    @check(points=points, category="timing", visibility="visible", name=name)
    def batched_faster(student: StudentProxy) -> str:
        """Paired runs over several T; at the largest T the batched version is clearly faster than the loop."""
        rows: list[SpeedRow] = []
        with student.timing_session(REFERENCE_BATCHED_SOURCE, REFERENCE_BATCHED_NAME) as session:
            calls = VerifiedCalls(session)
            for t in sizes[:-1]:
                runs = TripletRuns(calls, loop_entry, batched_entry, t)
                runs(table_runs)
                rows.append(runs.row())
            runs = TripletRuns(calls, loop_entry, batched_entry, sizes[-1])
            outcome = decide(runs, steps, plan)
            rows.append(runs.row())
        table = format_speed_table(rows, loop_entry, batched_entry)
        where = (
            f"{calls.how_timed(student.device)}; each run times both versions and the reference (in a separate clean "
            f"process) back to back on fresh inputs, judged on medians over {outcome.runs} runs at T={sizes[-1]}; "
            f"all {calls.verified} results were checked"
        )
        best = rows[-1]
        if outcome.fraction < 1.0:
            speed_lo, ratio_lo = (bounds[0] for bounds in outcome.last.bounds)
            problems = []
            if steps[0].fraction(speed_lo) == 0.0:
                problems.append(f"only {best.speedup:.1f}× faster than the loop (needs {min_speedup:g}×)")
            if steps[1].fraction(ratio_lo) == 0.0:
                problems.append(f"{best.ratio:.1f}× slower than a matrix-product reference (allowed {max_ratio:g}×)")
            raise CheckFailed(
                f"at T={best.t} {batched_entry} is {' and '.join(problems)}; {where}. Compute all scores with one "
                f"matrix product instead of a Python loop.\n{table}"
            )
        return (
            f"{batched_entry} is {best.speedup:.0f}× faster than {loop_entry} and {best.ratio:.1f}× the reference at "
            f"T={best.t} ({where}).\n{table}"
        )

    return batched_faster
