"""The metrics each process records. Multiprocess-safe: with PROMETHEUS_MULTIPROC_DIR set (before this module is
imported), prometheus_client keeps the values in files there, and /metrics sums every process's files.

Label values are bounded sets (a problem kind, a check category from graders.results.CATEGORIES, a verdict, a route
template), never anything a client or a student chose, so no series can be created at will.
"""

from __future__ import annotations

import logging

from prometheus_client import Counter, Histogram

from graders.results import CATEGORIES, CheckResult

# Seconds: fill-in answers grade in milliseconds, code problems in seconds to a minute.
_GRADING_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600)

GRADING_SECONDS = Histogram(
    "autograder_grading_duration_seconds",
    "Wall time of one grading job, by problem kind",
    ["kind"],
    buckets=_GRADING_BUCKETS,
)
CHECK_SECONDS = Histogram(
    "autograder_check_duration_seconds",
    "Duration of one check, by check category",
    ["category"],
    buckets=_GRADING_BUCKETS,
)
VERDICTS = Counter("autograder_verdicts_total", "Graded submissions by verdict and problem kind", ["kind", "verdict"])
INTERNAL_ERRORS = Counter(
    "autograder_grading_internal_errors_total", "Grading jobs that failed on our side (retried)", ["error_type"]
)
SANDBOX_RESTARTS = Counter("autograder_sandbox_restarts_total", "Sandbox zygotes restarted after a sandbox failure")
HTTP_SECONDS = Histogram(
    "autograder_http_request_duration_seconds",
    "HTTP request duration by route template",
    ["method", "route", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
WEBHOOK_DELIVERIES = Counter(
    "autograder_webhook_deliveries_total",
    "Webhook delivery attempts by outcome (succeeded, retrying, failed, disabled)",
    ["outcome"],
)
RATE_LIMITED = Counter("autograder_rate_limited_total", "Requests refused by a rate limit", ["limit"])

_ERROR_TYPES = frozenset({"SandboxError", "TimeoutError", "OperationalError", "OSError"})


def observe_grading(kind: str, verdict: str, seconds: float, checks: list[CheckResult]) -> None:
    GRADING_SECONDS.labels(kind=kind).observe(seconds)
    VERDICTS.labels(kind=kind, verdict=verdict).inc()
    for check in checks:
        category = check.category if check.category in CATEGORIES else "other"
        CHECK_SECONDS.labels(category=category).observe(check.duration_ms / 1000)


def observe_internal_error(error_type: str) -> None:
    INTERNAL_ERRORS.labels(error_type=error_type if error_type in _ERROR_TYPES else "other").inc()


_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def observe_http(method: str, route: str, status: int, seconds: float) -> None:
    # The method is the client's text: anything unusual is one series, "other".
    method = method if method in _METHODS else "other"
    HTTP_SECONDS.labels(method=method, route=route, status=str(status)).observe(seconds)


class SandboxRestartCounter(logging.Filter):
    """Counts the code grader's "restarting the zygote" warnings (graders/ cannot import app/ to count them itself).

    Attached to the ``graders.code.runner`` logger by ``install``; it never drops a record.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and str(record.msg).startswith("sandbox failure"):
            SANDBOX_RESTARTS.inc()
        return True


_restart_counter = SandboxRestartCounter()


def install() -> None:
    logger = logging.getLogger("graders.code.runner")
    if _restart_counter not in logger.filters:
        logger.addFilter(_restart_counter)
