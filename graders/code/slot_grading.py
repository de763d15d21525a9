"""Grading one submission in one borrowed slot: spawn, load the source, run every check, clean up."""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from graders.code import verdicts
from graders.code.checks import CheckFailed, CheckSpec, StudentError
from graders.code.proxy import BadReturnValue, CheckBudgetExceeded, CheckUsageError, SandboxProxy
from graders.code.sanitise import sanitise
from graders.model import CodeProblem
from graders.results import CheckResult, GradeResult, Verdict, Visibility
from graders.sandbox import codec
from graders.sandbox.config import RunLimits, SandboxConfig
from graders.sandbox.errors import RunEnded, SandboxError
from graders.sandbox.slot import REFERENCE, Slot
from graders.sandbox.student_process import StudentProcess

log = logging.getLogger(__name__)
CPU_SLACK_S = 5
FEEDBACK_CHARS, TYPE_CHARS, TEXT_CHARS = verdicts.FEEDBACK_CHARS, 100, 500
clip, loggable = verdicts.clip, verdicts.loggable


@dataclass
class CheckOutcome:
    result: CheckResult
    failure: str | None  # a verdicts kind, or None


def run_limits(problem: CodeProblem, checks: list[CheckSpec]) -> RunLimits:
    """The child's rlimits: CPU covers every check's budget (wall-clock limits do the fine-grained work)."""
    budget = problem.limits.time_s + sum(min(c.timeout_s, problem.limits.time_s * 10) for c in checks)
    return RunLimits(
        memory_mb=problem.limits.memory_mb,
        cpu_s=math.ceil(budget) + CPU_SLACK_S,
        output_kb=problem.limits.output_kb,
    )


def grading_budget_s(problem: CodeProblem, checks: list[CheckSpec]) -> float:
    """The longest one grading may take: loading the source plus every check's whole budget (wall clock)."""
    return problem.limits.time_s + sum(c.timeout_s for c in checks)


def grade_in_slot(
    slot: Slot, config: SandboxConfig, *, source: str, problem: CodeProblem, checks: list[CheckSpec]
) -> GradeResult:
    """Raises SandboxError on an internal failure before a result exists (the caller retries with a fresh zygote).

    A cleanup failure after grading keeps the result: the slot is marked for a zygote restart instead.
    """
    limits = run_limits(problem, checks)
    process = slot.spawn(limits)
    result: GradeResult | None = None
    try:
        result = _grade(process, config, source=source, problem=problem, checks=checks, slot=slot)
        return result
    finally:
        try:
            report = process.finish()
            if report.output_total:
                log.debug("submission printed %d bytes", report.output_total)
        except SandboxError as exc:
            if result is None:
                raise
            log.warning("cleanup after grading failed; the zygote restarts before the next run: %s", loggable(exc))
            slot.needs_restart = True


@contextlib.contextmanager
def reference_child(slot: Slot, student: StudentProcess) -> Iterator[StudentProcess]:
    """A fresh child for instructor code in the student's slot, while every process of the student is stopped.

    The student is resumed (or, if that fails, killed) and the reference child killed and wiped, whatever happens.
    """
    student.pause()
    try:
        ref = slot.spawn(student.h.limits, role=REFERENCE)
        try:
            yield ref
        finally:
            try:
                ref.finish()
            except SandboxError as exc:
                log.warning("cleanup of a reference child failed; the zygote restarts: %s", loggable(exc))
                slot.needs_restart = True
    finally:
        student.resume()


def _grade(
    process: StudentProcess,
    config: SandboxConfig,
    *,
    source: str,
    problem: CodeProblem,
    checks: list[CheckSpec],
    slot: Slot | None = None,
) -> GradeResult:
    early = _load(process, source, problem, checks)
    if early is not None:
        return early
    caps = codec.Caps(max_bytes=config.max_transfer_mb * 2**20)
    outcomes: list[CheckOutcome] = []
    ended: RunEnded | None = None
    for spec in checks:
        if ended is not None:
            outcomes.append(CheckOutcome(verdicts.not_run(spec, ended.message), None))
            continue
        reference = None if slot is None else _reference_factory(slot, process)
        proxy = SandboxProxy(
            process,
            call_limit_s=problem.limits.time_s,
            check_limit_s=spec.timeout_s,
            device=config.device,
            caps=caps,
            reference=reference,
            entrypoints=problem.entrypoints,
            source=source,
        )
        try:
            outcomes.append(run_check(spec, proxy))
        except RunEnded as exc:
            ended = exc
            outcomes.append(CheckOutcome(_result(spec, 0.0, exc.message, 0.0), None))
    results = [o.result for o in outcomes]
    failures = [o.failure for o in outcomes if o.failure is not None]
    verdict = verdicts.overall(results, failures, ended.cause if ended else None)
    return GradeResult(verdict=verdict, checks=results, message=clip(ended.message, FEEDBACK_CHARS) if ended else "")


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

    def done(fraction: float, feedback: str, failure: str | None = None) -> CheckOutcome:
        return CheckOutcome(_result(spec, fraction, feedback, time.perf_counter() - start), failure)

    try:
        feedback = spec.func(proxy)
        return done(1.0, "" if feedback is None else str(feedback))
    except CheckFailed as exc:
        return done(exc.score_fraction, exc.feedback)
    except AssertionError as exc:
        return done(0.0, str(exc) or "the check's assertion failed")
    except BadReturnValue as exc:
        return done(0.0, exc.message, verdicts.BAD_RETURN)
    except StudentError as exc:
        kind = verdicts.MEMORY if verdicts.is_memory_error(exc.type_name, exc.message) else verdicts.RAISED
        message = sanitise(exc.message, visible=spec.visibility == Visibility.VISIBLE)
        return done(0.0, f"your function raised {exc.type_name[:100]}: {message}", kind)
    except CheckBudgetExceeded as exc:
        return done(0.0, str(exc), verdicts.TIMEOUT)
    except CheckUsageError as exc:
        log.error("check %s misused the sandbox: %s", spec.name, loggable(exc))
        return done(0.0, "the check could not run (an error in the check, not in your code)", verdicts.CHECK_ERROR)
    except Exception as exc:
        log.warning("check %s raised %s: %s", spec.name, type(exc).__name__, loggable(exc))
        feedback = f"the check could not evaluate your function's result ({type(exc).__name__})"
        return done(0.0, feedback, verdicts.CHECK_ERROR)


def _result(spec: CheckSpec, fraction: float, feedback: str, seconds: float) -> CheckResult:
    passed = fraction >= 1.0
    return CheckResult(
        name=spec.name,
        category=spec.category,
        passed=passed,
        score=round(spec.points * fraction, 6),
        max_score=spec.points,
        feedback=clip(feedback, FEEDBACK_CHARS),
        visibility=spec.visibility,
        duration_ms=round(seconds * 1000, 3),
    )
