"""What one submission's reverse calls may cost the trusted side: CPU seconds and bytes, across all its checks.

A reverse call runs a check's ``TrustedFunction`` on arguments the student's code chose, on the trusted side (the
service decodes and encodes; a set's checker runs the function). Each call is capped (``proxy.MAX_CALLBACKS`` per
call, ``codec.CALLBACK_CAPS`` per frame), but not how many calls a submission makes in all: a student's test that
calls its layer at the limit in every call spent 26 s of the grader's CPU, 50 times an honest test. So one budget
per submission, shared by every check and child of it, counts the trusted side's CPU time and the bytes that cross
for reverse calls; once it is spent every further reverse call of the submission is refused, in the grader's own
words, as the student's doing (``proxy._answer_callback``). It is checked before a call runs, so a submission
overshoots by at most one call (bounded by the caps and the function's own cost).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# The defaults of SandboxConfig.reverse_cpu_s and reverse_mb: the shipped q7 solution costs the trusted side 0.5 s
# of CPU and 1.6 MiB per submission (measured, three gradings), so 16 and 300 times that.
REVERSE_CPU_S = 8.0
REVERSE_BYTES = 512 * 2**20
BUDGET_SPENT = (
    "called the grader's functions more than one submission may (a budget of the grader's CPU time and data for "
    "all its checks together): make fewer or smaller calls"
)


@dataclass
class ReverseBudget:
    """The trusted side's cost of one submission's reverse calls so far, against its limits."""

    cpu_s: float = REVERSE_CPU_S
    max_bytes: int = REVERSE_BYTES
    spent_cpu_s: float = 0.0
    spent_bytes: int = 0

    def spent(self) -> bool:
        return self.spent_cpu_s >= self.cpu_s or self.spent_bytes >= self.max_bytes

    def charge_bytes(self, count: int) -> None:
        self.spent_bytes += count

    def charge_cpu(self, seconds: float) -> None:
        """CPU time used for the submission elsewhere than on this thread (the set's checker running a function)."""
        self.spent_cpu_s += max(seconds, 0.0)


class ThreadCpu:
    """This thread's CPU time across a block (``with ThreadCpu(budget):``), charged to ``budget``: a wait on
    another process costs nothing here, the other process's time is charged by whoever reads its clock."""

    def __init__(self, budget: ReverseBudget) -> None:
        self.budget = budget
        self.start = 0.0

    def __enter__(self) -> ThreadCpu:
        self.start = time.thread_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.budget.charge_cpu(time.thread_time() - self.start)


__all__ = ["BUDGET_SPENT", "REVERSE_BYTES", "REVERSE_CPU_S", "ReverseBudget", "ThreadCpu"]
