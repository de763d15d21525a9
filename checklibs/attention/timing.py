"""Timing against a reference timed in a clean process, run by run; only verified results are timed.

- Work, not waiting: a call's time is the CPU time its child used during the call, read by the trusted side
  (``TimedCall.seconds``; on a GPU worker the wall time), with one intra-op thread on both sides. Load beside the
  run only delays it and a sleep uses no CPU, so neither earns nor loses a point; the wall time is kept for the
  table, and a call that waited far beyond its work is told so.
- Paired runs (``StudentProxy.timing_session``): one clean jailed child holds the instructor's reference
  (jail_sources) for the whole check and never sees student code; every run times the student's function and the
  reference back to back (student first, then reference, then the other way round), and the student's processes
  are stopped whenever the reference runs, so each run gives one paired ratio, student time over reference time
  (what cache and frequency effects remain hit both halves of a run alike).
- Fresh inputs: every call, warm-ups included, gets inputs drawn from a seed of its own (``secrets``), so no cache
  (on identity, content, or content rounded) can answer a timed call, and the inputs cannot be known in advance.
- Every call verified: the float64 reference results of a batch's inputs are computed on the trusted side *before*
  the batch runs; the batch's calls then run back to back, and every result is decoded and compared only after
  the batch's last call (``VerifiedCalls``). Nothing between two calls depends on what a call returned, and there
  is no call that is not checked, so a function cannot tell checked calls from unchecked ones: there are none. Any
  wrong result (or an exception) anywhere gives no timing points.
- The score: the median of the paired ratios, mapped to full points up to ``full_ratio``, ``partial`` between,
  none from ``zero_ratio``; measured sequentially until the median's confidence interval is clearly inside one
  band, re-measured when it sits on an edge (``sequential``). The check's score is the worst over the sizes.
"""

from __future__ import annotations

import contextlib
import secrets
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from checklibs.attention.calling import as_pair, student_message
from checklibs.attention.compare import compare, shape_problem
from checklibs.attention.inputs import AttentionCase, generator, key_valid_mask, randn
from checklibs.attention.jail_sources import REFERENCE_NAME, REFERENCE_SOURCE
from checklibs.attention.reference import reference_attention
from checklibs.attention.sequential import Outcome, Plan, Sample, Steps, decide
from graders.code.check_api import CheckFailed, CheckFunc, StudentError, StudentProxy, TimedCall, TimingSession, check

# The result of a timed function at timing sizes, against the float64 reference (float32 inputs).
VERIFY_RTOL, VERIFY_ATOL = 1e-3, 1e-4
# CPU time varies by a few per cent from run to run where wall time under load varied several-fold, so the first
# look (5 runs, the fewest whose median interval is finite at alpha 0.05) nearly always decides; at most 9 runs
# per series (13 when wall time was timed).
PLAN = Plan(first=5, step=2, most=9)
WAITED = 2.0  # a call whose wall time is this many times its work (and 1 ms more) waited: a sleep, or load

Args = tuple[list[Any], dict[str, Any]]
Expected = tuple[Tensor, Tensor]  # (output, weights) of the float64 reference


def fresh_seed() -> int:
    """A seed nobody can predict: timing inputs need no reproducibility, and must not be precomputable."""
    return secrets.randbelow(2**62)


def timing_args(t: int, seed: int) -> Args:
    """float32 self-sized inputs (B=2, H=2, D=16) with a key mask: the common path."""
    gen = generator(seed)
    q, k, v = (randn(gen, 2, 2, t, 16).float() for _ in range(3))
    return [q, k, v], {"key_valid": key_valid_mask(gen, 2, t, p_valid=0.8)}


def timing_case(t: int, seed: int) -> AttentionCase:
    (q, k, v), kwargs = timing_args(t, seed)
    return AttentionCase(f"T={t}", q, k, v, kwargs.get("key_valid"))


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Trusted-side torch work of a timing check (reference results, comparisons) on the calling thread alone.

    These tensors are large enough for torch to split each op over its intra-op threads, and on a busy machine one
    descheduled thread stalls every op: ~5× slower with a CPU-bound process beside. None of this work is timed, but
    it is most of the check's wall time. With torch's OpenMP backend the setting is the calling thread's; it is
    restored on exit (where torch refuses to change it, the work runs as it is).
    """
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    try:
        torch.set_num_threads(1)
    except RuntimeError:
        yield
        return
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _close(got: Any, want: Tensor) -> bool:
    """The common case of ``compare`` in a few passes: |got - want| <= atol + rtol·|want| everywhere (NaN never).

    ``want`` is a finite float64 reference, so this is torch.isclose's rule; anything else goes to ``compare``,
    which also writes the report.
    """
    if shape_problem(got, want, "x") is not None:
        return False
    diff = got.detach().to("cpu", torch.float64).sub_(want).abs_()
    return bool((diff <= want.abs().mul_(VERIFY_RTOL).add_(VERIFY_ATOL)).all())


@dataclass
class _Pending:
    entry: str
    case: AttentionCase
    expected: Expected
    call: TimedCall


class VerifiedCalls:
    """The student's calls of a timing session, each compared with the trusted reference as its result arrives.

    ``expect`` computes the float64 reference of a case on the trusted side (do it for a whole batch before the
    batch runs); ``call`` makes one timed call, then decodes and compares its result and drops it, keeping only the
    first wrong one's report; ``verify`` raises that report (CheckFailed) and is called after the batch's last call.
    Nothing the next call is sent depends on a result, so the student's code learns no more than before, when every
    result was kept until the batch ended: a series of results at the transfer cap (60 MiB each) were all held at
    once. After the first wrong result, later ones are not read.
    """

    def __init__(self, session: TimingSession) -> None:
        self.session = session
        self.failure: CheckFailed | None = None
        self.verified = 0
        self.waited = 0  # calls whose wall time was far above their work (``WAITED``): not counted, only told

    @staticmethod
    def expect(case: AttentionCase) -> Expected:
        return reference_attention(case.q, case.k, case.v, case.key_valid, case.causal)

    def call(self, entry: str, case: AttentionCase, expected: Expected) -> float:
        """One timed call of ``entry`` on ``case``: its seconds (CheckFailed when it raised)."""
        try:
            timed = self.session.student(entry, case.args, case.kwargs)
        except StudentError as err:
            raise CheckFailed(
                f"{entry} raised {student_message(err, visible=True)} while being timed ({case.label})"
            ) from None
        if self.failure is None:
            try:
                with one_thread():
                    self._compare(_Pending(entry, case, expected, timed))
            except CheckFailed as failed:
                self.failure = failed
        if timed.wall_seconds is not None and timed.wall_seconds > WAITED * timed.seconds + 1e-3:
            self.waited += 1
        return timed.seconds

    def how_timed(self, device: str) -> str:
        """How the calls were timed, for the feedback: what counted, and whether some of them waited."""
        if device == "cuda":
            return f"timed on {device} (wall time, the kernels waited for)"
        waited = (
            f"; {self.waited} of your calls took far longer than their CPU time (a sleep, or load on the machine): "
            "waiting is neither counted nor rewarded"
            if self.waited
            else ""
        )
        return f"timed on {device} as CPU time, the work itself, whatever the load{waited}"

    def verify(self) -> None:
        failure, self.failure = self.failure, None
        if failure is not None:
            raise failure

    def _compare(self, item: _Pending) -> None:
        out, weights = as_pair(item.call.result(), item.entry, item.case)
        for what, got, want in (("weights", weights, item.expected[1]), ("output", out, item.expected[0])):
            if _close(got, want):
                continue
            problem = compare(got, want, rtol=VERIFY_RTOL, atol=VERIFY_ATOL, what=what)
            if problem:
                raise CheckFailed(
                    f"at {item.case.label} (one of the calls made while timing) {item.entry} returned wrong "
                    f"{what}: {problem}. Only correct results are timed: every timed call is checked."
                )
        self.verified += 1


@dataclass
class PairedRuns:
    """The runs of one size: each run one student call and one reference call, back to back, on fresh inputs.

    Called with n, it makes n more runs as one batch (plus one warm-up run before the first, not counted):
    reference results first, then the calls, then the verification of every result, then the n ratios.
    """

    calls: VerifiedCalls
    entry: str
    make_case: Callable[[int], AttentionCase]
    student_s: list[float] = field(default_factory=list)
    reference_s: list[float] = field(default_factory=list)
    warmed_up: bool = False
    _flip: bool = False

    def _run(self, case: AttentionCase, expected: Expected) -> tuple[float, float]:
        session = self.calls.session
        self._flip = not self._flip
        if self._flip:
            mine = self.calls.call(self.entry, case, expected)
            return mine, session.reference(case.args, case.kwargs)
        ref = session.reference(case.args, case.kwargs)
        return self.calls.call(self.entry, case, expected), ref

    def __call__(self, n: int) -> list[Sample]:
        with one_thread():
            cases = [self.make_case(fresh_seed()) for _ in range(n + (not self.warmed_up))]
            expected = [VerifiedCalls.expect(case) for case in cases]  # ahead of the calls
        runs = [self._run(case, want) for case, want in zip(cases, expected, strict=True)]
        with one_thread():
            self.calls.verify()
        if not self.warmed_up:
            self.warmed_up, runs = True, runs[1:]
        for mine, ref in runs:
            self.student_s.append(mine)
            self.reference_s.append(ref)
        return [(mine / max(ref, 1e-9),) for mine, ref in runs]


@dataclass(frozen=True)
class SizeResult:
    t: int
    outcome: Outcome
    student_ms: float
    reference_ms: float

    @property
    def ratio(self) -> float:
        return self.outcome.last.medians()[0]

    @property
    def interval(self) -> tuple[float, float]:
        return self.outcome.last.bounds[0]


def steps_for(full_ratio: float, zero_ratio: float, partial: float) -> Steps:
    return Steps((full_ratio, zero_ratio), (1.0, partial, 0.0))


def format_table(rows: list[SizeResult]) -> str:
    """An aligned text table: T, medians of both times, the median ratio with its interval, runs, score."""
    header = f"{'T':>5}  {'yours ms':>10}  {'reference ms':>12}  {'ratio':>7}  {'interval':>13}  {'runs':>4}  score"
    lines = [header]
    for r in rows:
        lo, hi = r.interval
        where = f"{lo:.1f}–{hi:.1f}×" if lo > 0 else "-"
        mark = "" if r.outcome.decided else " (on an edge)"
        lines.append(
            f"{r.t:>5}  {r.student_ms:>10.3f}  {r.reference_ms:>12.3f}  {r.ratio:>6.1f}×  {where:>13}  "
            f"{r.outcome.runs:>4}  {r.outcome.fraction:g}{mark}"
        )
    return "\n".join(lines)


def measure_size(
    session: TimingSession, calls: VerifiedCalls, entry: str, t: int, steps: Steps, plan: Plan
) -> SizeResult:
    runs = PairedRuns(calls, entry, lambda seed: timing_case(t, seed))
    outcome = decide(runs, [steps], plan)
    return SizeResult(t, outcome, statistics.median(runs.student_s) * 1e3, statistics.median(runs.reference_s) * 1e3)


def timing_check(
    *,
    points: float = 1.0,
    entry: str = "scaled_attention",
    name: str = "timing",
    sizes: tuple[int, ...] = (128, 256),
    full_ratio: float = 3.0,
    zero_ratio: float = 12.0,
    partial: float = 0.5,
    plan: Plan = PLAN,
) -> CheckFunc:
    """Build the timing check: at each size, the median of paired ratios to the clean-process reference is scored.

    Full points when it is clearly at most ``full_ratio``, ``partial`` of them up to ``zero_ratio``, none beyond;
    the check's score is the worst size's. Every call made while timing is verified, so a submission cannot look
    fast by answering some inputs with garbage.
    """
    steps = steps_for(full_ratio, zero_ratio, partial)

    @check(points=points, category="timing", visibility="visible", name=name)
    def timing(student: StudentProxy) -> str:
        """Paired runs against a reference in a clean process; the median ratio over several T is scored."""
        measured: list[SizeResult] = []
        with student.timing_session(REFERENCE_SOURCE, REFERENCE_NAME) as session:
            calls = VerifiedCalls(session)
            for t in sizes:
                measured.append(measure_size(session, calls, entry, t, steps, plan))
                if measured[-1].outcome.fraction == 0.0:
                    break  # nothing can raise the score: the larger sizes are not measured
        worst = min(measured, key=lambda r: (r.outcome.fraction, -r.ratio))
        fraction = worst.outcome.fraction
        table = format_table(measured)
        where = (
            f"{calls.how_timed(student.device)}; each run times your function and the reference (in a separate clean "
            f"process) back to back on fresh inputs, and the median of the ratios is measured until it is clearly "
            f"inside one band; all {calls.verified} results were checked"
        )
        if fraction < 1.0:
            skipped = "" if len(measured) == len(sizes) else "; larger T were not measured"
            raise CheckFailed(
                f"your function is {worst.ratio:.1f}× slower than the reference at T={worst.t} (median of paired "
                f"runs; full points up to {full_ratio:g}×, {partial:g} of them up to {zero_ratio:g}×, none beyond); "
                f"{where}{skipped}.\n{format_table(measured)}\nAvoid Python loops over queries or keys: compute "
                "all scores with one matrix product.",
                score_fraction=fraction,
            )
        return f"Within {full_ratio:g}× of the reference ({where}).\n{table}"

    return timing
