"""The set's late policy: how late a submission is, what that costs, and when submissions close."""

from __future__ import annotations

import math
from datetime import datetime, timedelta

from graders.model import ProblemSetSpec

DAY = timedelta(days=1)


def days_late(spec: ProblemSetSpec, submitted_at: datetime) -> int:
    """Whole days (rounded up) past the due date; 0 when on time or when the set has no due date."""
    if spec.due_at is None or submitted_at <= spec.due_at:
        return 0
    return math.ceil((submitted_at - spec.due_at) / DAY)


def late_penalty(spec: ProblemSetSpec, submitted_at: datetime) -> float:
    return min(1.0, days_late(spec, submitted_at) * spec.late_policy.penalty_per_day)


def is_closed(spec: ProblemSetSpec, now: datetime) -> bool:
    """Past the due date plus the allowed late days: students can no longer submit."""
    return spec.due_at is not None and now > spec.due_at + spec.late_policy.max_late_days * DAY
