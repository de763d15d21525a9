"""Grading one submission in one borrowed slot: spawn, load the source, run every check, clean up."""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from graders.code import verdicts
from graders.code.checks import CheckFailed, CheckSpec, GraderWordedError, StudentError
from graders.code.proxy import BadReturnValue, CheckBudgetExceeded, CheckUsageError, SandboxProxy
from graders.code.reverse_budget import ReverseBudget
from graders.code.sanitise import TrustedText
from graders.model import CodeProblem
from graders.results import CheckResult, GradeResult, Verdict, Visibility
from graders.sandbox import codec
from graders.sandbox.config import RunLimits, SandboxConfig
from graders.sandbox.errors import RunEnded
from graders.sandbox.slot import ALONE, REFERENCE, STUDENT, Slot
from graders.sandbox.student_process import StudentProcess
from graders.words import Said, Words, as_text, as_words

log = logging.getLogger(__name__)
CPU_SLACK_S = 5
FEEDBACK_CHARS, TYPE_CHARS, TEXT_CHARS = verdicts.FEEDBACK_CHARS, 100, 500
clip, loggable = verdicts.clip, verdicts.loggable


@dataclass
class CheckOutcome:
    result: CheckResult
    failure: str | None  # a verdicts kind, or None
    run_end: RunEnded | None = None  # the hidden (or sealed) check's child stopped during this check


def run_limits(problem: CodeProblem, checks: list[CheckSpec]) -> RunLimits:
    """The child's rlimits: CPU covers every check's budget (wall-clock limits do the fine-grained work)."""
    budget = problem.limits.time_s + sum(min(c.timeout_s, problem.limits.time_s * 10) for c in checks)
    return RunLimits(
        memory_mb=problem.limits.memory_mb,
        cpu_s=math.ceil(budget) + CPU_SLACK_S,
        output_kb=problem.limits.output_kb,
    )


def grade_in_slot(
    slot: Slot, config: SandboxConfig, *, source: str, problem: CodeProblem, checks: list[CheckSpec]
) -> GradeResult:
    """Raises SandboxError on an internal failure before a result exists (the caller retries with a fresh zygote).

    Hidden means hidden: the visible checks share one child (it also loads the source first, so syntax errors and
    missing functions are found once) and run first; that child is then killed, so no visible check ever runs in
    or after a child that saw a hidden input. The hidden checks then share one fresh child of their own and the
    sealed (after_due) checks another (``_run_sharing``), so nothing a sealed check shows can depend on how a hidden
    check called the code, nor the other way round. Results keep the checks' order.

    A cleanup failure after grading keeps the result: the slot is marked for a zygote restart instead.
    """
    limits = run_limits(problem, checks)
    groups = [
        [i for i, spec in enumerate(checks) if spec.visibility is visibility]
        for visibility in (Visibility.HIDDEN, Visibility.AFTER_DUE)
    ]
    slot.pool.want(ALONE, sum(1 for group in groups if group))
    caps = codec.Caps(max_bytes=config.max_transfer_mb * 2**20)
    # What this submission's reverse calls may cost the trusted side, all its checks together.
    budget = ReverseBudget(config.reverse_cpu_s, config.reverse_mb << 20)
    outcomes: dict[int, CheckOutcome] = {}
    ended: RunEnded | None = None  # the visible child stopped: later visible checks are not run
    with _child(slot, limits) as shared:
        early = _load(shared, source, problem, checks)
        if early is not None:
            return early
        for i, spec in enumerate(checks):
            if spec.visibility is not Visibility.VISIBLE:
                continue
            if ended is not None:
                outcomes[i] = CheckOutcome(verdicts.not_run(spec, ended.message), None)
                continue
            try:
                outcomes[i] = run_check(spec, _proxy(shared, slot, config, caps, budget, problem, spec, source))
            except RunEnded as exc:
                ended = exc
                outcomes[i] = CheckOutcome(_result(spec, 0.0, exc.message, 0.0), None)
    for group in groups:
        if group:
            specs = [checks[i] for i in group]
            outcomes.update(
                zip(group, _run_sharing(slot, limits, config, caps, budget, source, problem, specs), strict=True)
            )
    ordered = [outcomes[i] for i in range(len(checks))]
    results = [o.result for o in ordered]
    failures = [o.failure for o in ordered if o.failure is not None]
    # A run that stopped names the verdict: the visible child's first, else the first hidden or sealed check's.
    first_end = ended or next((o.run_end for o in ordered if o.run_end is not None), None)
    verdict = verdicts.overall(results, failures, first_end.cause if first_end else None)
    message = clip(first_end.message, FEEDBACK_CHARS) if first_end else ""
    return GradeResult(verdict=verdict, checks=results, message=message)


@contextlib.contextmanager
def _child(slot: Slot, limits: RunLimits, role: str = STUDENT) -> Iterator[StudentProcess]:
    """A fresh locked-down child (from the slot's pool), killed whatever happens; SandboxError if it cannot start.

    The child is killed on the way out; its reap and wipe run in the slot's background (``Slot.release``). A cleanup
    failure there is logged and marks the zygote for a restart; the result stands.
    """
    process = slot.spawn(limits, role=role)
    try:
        yield process
    finally:
        slot.release(process)


def _proxy(
    process: StudentProcess,
    slot: Slot,
    config: SandboxConfig,
    caps: codec.Caps,
    budget: ReverseBudget,
    problem: CodeProblem,
    spec: CheckSpec,
    source: str,
) -> SandboxProxy:
    return SandboxProxy(
        process,
        call_limit_s=problem.limits.time_s,
        check_limit_s=spec.timeout_s,
        device=config.device,
        caps=caps,
        reference=_reference_factory(slot, process),
        entrypoints=problem.entrypoints,
        source=source,
        budget=budget,
    )


def _run_sharing(
    slot: Slot,
    limits: RunLimits,
    config: SandboxConfig,
    caps: codec.Caps,
    budget: ReverseBudget,
    source: str,
    problem: CodeProblem,
    specs: list[CheckSpec],
) -> list[CheckOutcome]:
    """Hidden (or sealed) checks in children of their own, which never run a visible check: one while all goes well.

    The checks share a fresh child, and each loads the source anew in it (a new module and no helpers, with the
    random generators put back as a fresh child has them: ``child.FreshState``), so a check sees the submission as
    it saw it in a child of its own, without the cost of one child per check. When the child ends (the code
    exited, ran out of memory, printed too much, broke the protocol), the code raised a MemoryError or the source
    no longer loads, the check is run again in a fresh child unless it already had one, so that what the earlier
    checks left behind (memory, output, a count kept across loads) can cost no check its points: the result that
    stands is the one a child of its own gave, as when every hidden check had a fresh child. A timeout stands where
    it happened (the check's call ran past its limit; a rerun would spend the check's budget twice). The checks
    after an end go on in a fresh child.

    Feedback is trusted text: an exit status or a signal number, chosen by the student's code, could carry a hidden
    value out, so a process that exited is said to have ended in fixed words.
    """
    outcomes: list[CheckOutcome] = []
    todo = list(specs)
    while todo:
        with _child(slot, limits, ALONE) as process:
            fresh = True  # no check has run in this child yet
            while todo:
                outcome, final = _run_one_sharing(process, slot, config, caps, budget, source, problem, todo[0], fresh)
                if outcome is None:  # the child's leftovers may be to blame: again, in a fresh child
                    break
                outcomes.append(outcome)
                todo.pop(0)
                fresh = False
                if final:  # the child ended or misbehaved: the next check gets a fresh one
                    break
    return outcomes


def _run_one_sharing(
    process: StudentProcess,
    slot: Slot,
    config: SandboxConfig,
    caps: codec.Caps,
    budget: ReverseBudget,
    source: str,
    problem: CodeProblem,
    spec: CheckSpec,
    fresh: bool,
) -> tuple[CheckOutcome | None, bool]:
    """One check in a shared hidden child: its outcome (None: run it again in a fresh child) and whether the child
    may serve no further check."""
    early = _load(process, source, problem, [spec])
    if early is not None:  # the code loaded in the visible child: now it did not (it behaves differently)
        if not fresh and (process.ended is None or process.ended.cause != "timeout"):
            return None, True
        return CheckOutcome(_result(spec, 0.0, "not run: your code could not be loaded again", 0.0), None), True
    process.helpers = set()  # a new module: the helpers an earlier check defined are gone with the old one
    try:
        outcome = run_check(spec, _proxy(process, slot, config, caps, budget, problem, spec, source))
    except RunEnded as exc:
        if not fresh and exc.cause != "timeout":
            return None, True
        text = TrustedText(spec.visibility is Visibility.VISIBLE).ended(exc.message)  # no cause: how is a bit
        return CheckOutcome(_result(spec, 0.0, text, 0.0), None, RunEnded(exc.cause, text)), True
    if outcome.failure == verdicts.MEMORY and not fresh:  # what earlier checks kept may be what ran out
        return None, True
    return outcome, process.ended is not None


BAD_RETURN_HIDDEN = (
    "your function returned a value that cannot be checked: return plain tensors, numbers, strings, booleans, None, "
    "or lists, tuples and dicts of them"
)


@contextlib.contextmanager
def reference_child(slot: Slot, student: StudentProcess) -> Iterator[StudentProcess]:
    """A fresh child for instructor code in the student's slot, while every process of the student is stopped.

    The student is resumed (or, if that fails, killed) and the reference child killed and wiped, whatever happens.
    """
    with slot.pool.hold():  # no fork or reap of the pool beside a timing measurement
        student.pause()
        try:
            with _child(slot, student.h.limits, REFERENCE) as ref:
                yield ref
        finally:
            student.resume()


def _reference_factory(
    slot: Slot, process: StudentProcess
) -> Callable[[], contextlib.AbstractContextManager[StudentProcess]]:
    return lambda: reference_child(slot, process)


def _load(process: StudentProcess, source: str, problem: CodeProblem, checks: list[CheckSpec]) -> GradeResult | None:
    """Send the source; a result here means grading stops before any check (syntax, import, missing names)."""
    try:
        reply = process.request({"op": "load"}, [source.encode()], problem.limits.time_s).msg
    except RunEnded as exc:
        message = f"while loading your code: {exc.message}"
        verdict = verdicts.RUN_END_VERDICTS.get(exc.cause, Verdict.RUNTIME_ERROR)
        return GradeResult(verdict, verdicts.all_not_run(checks, message), message)
    if reply.get("error") == "syntax":
        line = reply.get("line")
        where = f" at line {line}" if type(line) is int else ""
        message = f"SyntaxError{where}: {clip(str(reply.get('message', '')), TEXT_CHARS)}"
        return GradeResult(Verdict.SYNTAX_ERROR, verdicts.all_not_run(checks, message), message)
    if reply.get("error") == "raised":
        where = f" ({clip(str(reply['where']), TEXT_CHARS)})" if reply.get("where") else ""
        type_name = clip(str(reply.get("type")), TYPE_CHARS)
        text = clip(str(reply.get("message", "")), TEXT_CHARS)
        message = f"your code raised {type_name} while loading{where}: {text}"
        return GradeResult(Verdict.RUNTIME_ERROR, verdicts.all_not_run(checks, message), message)
    names = reply.get("names") if reply.get("ok") is True else None
    if type(names) is not list:
        message = "your code could not be loaded"
        return GradeResult(Verdict.RUNTIME_ERROR, verdicts.all_not_run(checks, message), message)
    missing = [n for n in problem.entrypoints if n not in names]
    if missing:
        found = ", ".join(str(n)[:80] for n in names[:20]) or "no functions"
        message = f"no function named {', '.join(missing)}; found: {found}"
        return GradeResult(Verdict.MISSING_FUNCTION, verdicts.all_not_run(checks, message), message)
    return None


def run_check(spec: CheckSpec, proxy: SandboxProxy) -> CheckOutcome:
    """Run one check; every exception but RunEnded becomes a failed (or partial) result."""
    start = time.perf_counter()
    visible = spec.visibility is Visibility.VISIBLE
    text = TrustedText(visible)

    def done(fraction: float, feedback: str | Said | Words, failure: str | None = None) -> CheckOutcome:
        return CheckOutcome(_result(spec, fraction, feedback, time.perf_counter() - start), failure)

    try:
        feedback = spec.func(proxy)
        return done(1.0, feedback if isinstance(feedback, (Said, Words)) else "" if feedback is None else str(feedback))
    except CheckFailed as exc:
        return done(exc.score_fraction, exc.words or exc.feedback)
    except AssertionError as exc:
        return done(0.0, str(exc) or "the check's assertion failed")
    except BadReturnValue as exc:
        # The refusal names the student's value (a class name of theirs): trusted words only in hidden checks.
        return done(0.0, exc.message if visible else BAD_RETURN_HIDDEN, verdicts.BAD_RETURN)
    except GraderWordedError as exc:
        return done(0.0, f"your function raised {exc.type_name}: {exc.message}", verdicts.RAISED)
    except StudentError as exc:
        # A hidden check words a MemoryError like any exception (how it failed would be a bit of the student's).
        kind = verdicts.MEMORY if verdicts.is_memory_error(exc.type_name, exc.message) else verdicts.RAISED
        return done(0.0, f"your function raised {text.raised(exc.type_name, exc.message)}", kind)
    except CheckBudgetExceeded as exc:
        return done(0.0, text.ended(str(exc)), verdicts.TIMEOUT)
    except CheckUsageError as exc:
        log.error("check %s misused the sandbox: %s", spec.name, loggable(exc))
        return done(0.0, "the check could not run (an error in the check, not in your code)", verdicts.CHECK_ERROR)
    except Exception as exc:
        log.warning("check %s raised %s: %s", spec.name, type(exc).__name__, loggable(exc))
        feedback = f"the check could not evaluate your function's result ({type(exc).__name__})"
        return done(0.0, feedback, verdicts.CHECK_ERROR)


def _result(spec: CheckSpec, fraction: float, feedback: str | Said | Words, seconds: float) -> CheckResult:
    passed = fraction >= 1.0
    text = clip(as_text(feedback), FEEDBACK_CHARS)
    words = as_words(feedback)
    # Words whose English was cut would say more on the page than the stored text: the text alone then.
    wire = words.to_wire() if words is not None and words.english() == text else None
    return CheckResult(
        name=spec.name,
        category=spec.category,
        passed=passed,
        score=round(spec.points * fraction, 6),
        max_score=spec.points,
        feedback=text,
        visibility=spec.visibility,
        duration_ms=round(seconds * 1000, 3),
        words=wire,
    )
