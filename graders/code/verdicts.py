"""How per-check outcomes and the end of a run become one Verdict, and the not-run results that keep scores whole."""

from __future__ import annotations

from graders.code.checks import CheckSpec
from graders.results import CheckResult, Verdict

# Why a check did not pass, as recorded by the session (None: it passed or failed on its merits).
RAISED, BAD_RETURN, MEMORY, TIMEOUT, CHECK_ERROR = "raised", "bad_return", "memory", "timeout", "check_error"

FEEDBACK_CHARS = 4000  # every check's feedback and every run message is cut to this (student-controlled text)


def clip(text: str, limit: int = FEEDBACK_CHARS) -> str:
    """Text shortened to ``limit`` characters, marked when cut."""
    return text if len(text) <= limit else text[: max(0, limit - 15)] + " ...(truncated)"


LOG_CHARS = 300


def loggable(value: object) -> str:
    """Text that may carry student-made strings, fit for a log line: bounded, and every control character escaped,
    so a submission can neither flood the log nor write lines of its own (a forged "ERROR ..." after a newline)."""
    return ascii(clip(str(value), LOG_CHARS))


RUN_END_VERDICTS = {
    "timeout": Verdict.TIMEOUT,
    "memory": Verdict.MEMORY_LIMIT,
    "output": Verdict.OUTPUT_LIMIT,
    "exited": Verdict.RUNTIME_ERROR,
    "protocol": Verdict.RUNTIME_ERROR,
}


def not_run(spec: CheckSpec, reason: str) -> CheckResult:
    return CheckResult(
        name=spec.name,
        category=spec.category,
        passed=False,
        score=0.0,
        max_score=spec.points,
        feedback=clip(f"not run: {reason}"),
        visibility=spec.visibility,
    )


def all_not_run(checks: list[CheckSpec], reason: str) -> list[CheckResult]:
    return [not_run(spec, reason) for spec in checks]


def overall(results: list[CheckResult], failures: list[str], run_end_cause: str | None) -> Verdict:
    """The submission's verdict: a run that ended early names why; otherwise the checks decide.

    Args:
        failures: the kinds (RAISED, BAD_RETURN, ...) of checks that failed because of how the code behaved.
        run_end_cause: RunEnded.cause when the student's process stopped, else None.
    """
    if run_end_cause is not None:
        return RUN_END_VERDICTS.get(run_end_cause, Verdict.RUNTIME_ERROR)
    if results and all(r.passed for r in results):
        return Verdict.ACCEPTED
    if any(r.score > 0 for r in results):
        return Verdict.PARTIAL
    for kind, verdict in (
        (BAD_RETURN, Verdict.BAD_RETURN_TYPE),
        (MEMORY, Verdict.MEMORY_LIMIT),
        (TIMEOUT, Verdict.TIMEOUT),
        (RAISED, Verdict.RUNTIME_ERROR),
    ):
        if kind in failures:
            return verdict
    return Verdict.WRONG_ANSWER


def is_memory_error(type_name: str, message: str) -> bool:
    """An allocation refused by the address-space limit surfaces as an exception, not a kill."""
    return type_name == "MemoryError" or "can't allocate memory" in message or "out of memory" in message.lower()
