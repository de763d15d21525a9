"""One student's effective policy for one problem of an assignment, and what it allows now.

The most specific setting wins: the member's override, else their section's, else the problem's entry in the
assignment's ``problem_policies``, else the assignment, else the set's problemset.yaml, else the default.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from app.courses.models import Assignment, Counts, Membership, Override, Release
from app.errors import DomainError, Forbidden, Invalid
from graders.model import ProblemSetSpec

DAY = timedelta(days=1)
RELEASED = ("scores", "feedback", "explanation", "answer_key")
_PROBLEM_KEYS = {"max_attempts", "cooldown_s", "decay_per_attempt", "counts", "release"}


class TooManyAttempts(DomainError):
    """The attempt limit is used up, or the cooldown has not passed; ``retry_after`` is in seconds (or None)."""

    status_code = 429
    type = "too_many_attempts"

    def __init__(
        self,
        message: str,
        *,
        retry_after: int | None,
        next_attempt_at: datetime | None,
        problem_id: str = "",
        max_attempts: int | None = None,
    ) -> None:
        super().__init__(
            message,
            field="problem",
            extra={
                "retry_after": retry_after,
                "next_attempt_at": next_attempt_at.isoformat() if next_attempt_at else None,
            },
        )
        self.retry_after = retry_after
        # The parts of the message, for the pages to say it in the viewer's language and time zone.
        self.problem_id = problem_id
        self.max_attempts = max_attempts
        self.next_attempt_at = next_attempt_at


class Closed(Forbidden):
    """Past the student's deadline (due date or end of their time) and the late days allowed: nothing is stored."""


class InvalidFormat(Invalid):
    """An answer that cannot be read at all: refused before it is stored, so it uses no attempt."""

    type = "invalid_format"

    def __init__(self, reasons: dict[str, str]) -> None:
        text = "; ".join(f"{part}: {reason}" for part, reason in reasons.items())
        super().__init__(f"invalid format: not counted ({text})", field="answers", extra={"invalid_parts": reasons})


@dataclass(frozen=True)
class Policy:
    open_at: datetime | None
    due_at: datetime | None
    penalty_per_day: float
    max_late_days: int
    max_attempts: int | None
    cooldown_s: int
    decay_per_attempt: float
    counts: Counts
    release: dict[str, Release]
    # A timed assignment: when this student's time ends (their start + limit x multiplier). None: untimed, or
    # their clock has not started.
    time_ends_at: datetime | None = None

    @property
    def deadline(self) -> datetime | None:
        """This student's own deadline: the due date, or the end of their time if that comes first. Lateness and
        closing count from it; releases "after the due date" wait for the due date itself (others may still be
        working)."""
        ends = [d for d in (self.due_at, self.time_ends_at) if d is not None]
        return min(ends) if ends else None

    def days_late(self, at: datetime) -> int:
        deadline = self.deadline
        if deadline is None or at <= deadline:
            return 0
        return math.ceil((at - deadline) / DAY)

    def late_penalty(self, at: datetime) -> float:
        return min(1.0, self.days_late(at) * self.penalty_per_day)

    def is_closed(self, now: datetime) -> bool:
        """No more submissions from this student: past their deadline and the late days allowed."""
        deadline = self.deadline
        return deadline is not None and now > deadline + self.max_late_days * DAY

    def _closed_for_everyone(self, now: datetime) -> bool:
        return self.due_at is not None and now > self.due_at + self.max_late_days * DAY

    def decay(self, attempt: int) -> float:
        """The fraction the attempt-th attempt loses: decay x (attempt - 1), at most everything."""
        return min(1.0, max(0, attempt - 1) * self.decay_per_attempt)

    def released(self, what: str, *, now: datetime, attempts_used: int, full_marks: bool) -> bool:
        """Whether ``what`` (scores, feedback, explanation, answer_key) is shown to the student now.

        An explanation may state the answers, so it opens only once the answer key is released as well; check
        feedback says whether a check passed ("correct"), so it opens only once the scores do.
        """
        needs = {"explanation": "answer_key", "feedback": "scores"}.get(what)
        if needs and not self.released(needs, now=now, attempts_used=attempts_used, full_marks=full_marks):
            return False
        when = self.release[what]
        if when == Release.IMMEDIATELY:
            return True
        if when == Release.AFTER_DUE:
            return self.due_at is not None and now >= self.due_at
        if when == Release.AFTER_ATTEMPTS:
            out_of_attempts = self.max_attempts is not None and attempts_used >= self.max_attempts
            return full_marks or out_of_attempts or self._closed_for_everyone(now)
        return False


def override_for(assignment: Assignment, member: Membership | None) -> Override | None:
    """The member's own override, else one for their section, else None (the most specific wins)."""
    if member is None:
        return None
    mine = [o for o in assignment.overrides if o.membership_id == member.id]
    if mine:
        return mine[-1]
    section = [o for o in assignment.overrides if o.membership_id is None and o.section and o.section == member.section]
    return section[-1] if section else None


def policy_for(
    assignment: Assignment | None,
    spec: ProblemSetSpec,
    problem_id: str,
    member: Membership | None,
    *,
    started_at: datetime | None = None,
) -> Policy:
    """The effective policy of ``member`` (None: the assignment's own) for one problem; ``started_at``: when their
    clock of a timed assignment started (app.courses.clock)."""
    if assignment is None:  # legacy rows without an assignment: the set's own settings, nothing limited
        shown = _explanation_default(spec)
        return Policy(None, spec.due_at, spec.late_policy.penalty_per_day, spec.late_policy.max_late_days, None, 0,
                      0.0, Counts.BEST, {"scores": Release.IMMEDIATELY, "feedback": Release.IMMEDIATELY,
                                         "explanation": shown, "answer_key": shown})  # fmt: skip
    per_problem: dict[str, Any] = (assignment.problem_policies or {}).get(problem_id, {})
    override = override_for(assignment, member)
    max_attempts = per_problem.get("max_attempts", assignment.max_attempts)
    if max_attempts is not None and override is not None:
        max_attempts += override.extra_attempts
    due_at = (override.due_at if override and override.due_at else None) or assignment.due_at or spec.due_at
    penalty = next(
        v
        for v in (
            override.late_penalty_per_day if override else None,
            assignment.late_penalty_per_day,
            spec.late_policy.penalty_per_day,
        )
        if v is not None
    )
    release = {
        "scores": Release(assignment.release_scores),
        "feedback": Release(assignment.release_feedback),
        "explanation": Release(assignment.release_explanation),
        "answer_key": Release(assignment.release_answer_key),
    }
    release.update({k: Release(v) for k, v in per_problem.get("release", {}).items()})
    return Policy(
        open_at=assignment.open_at,
        due_at=due_at,
        penalty_per_day=penalty,
        max_late_days=assignment.max_late_days
        if assignment.max_late_days is not None
        else spec.late_policy.max_late_days,
        max_attempts=max_attempts,
        cooldown_s=int(per_problem.get("cooldown_s", assignment.cooldown_s)),
        decay_per_attempt=float(per_problem.get("decay_per_attempt", assignment.decay_per_attempt)),
        counts=Counts(per_problem.get("counts", assignment.counts)),
        release=release,
        time_ends_at=time_ends_at(assignment, override, started_at),
    )


def time_ends_at(assignment: Assignment, override: Override | None, started_at: datetime | None) -> datetime | None:
    """The end of a student's time at a timed assignment: start + limit x their multiplier (None: untimed or not
    started). The due date still caps it (Policy.deadline)."""
    if not assignment.time_limit_min or started_at is None:
        return None
    multiplier = override.time_multiplier if override is not None else 1.0
    return started_at + timedelta(minutes=assignment.time_limit_min * multiplier)


def _explanation_default(spec: ProblemSetSpec) -> Release:
    return {"after_grading": Release.IMMEDIATELY, "after_due": Release.AFTER_DUE}.get(
        spec.show_explanations, Release.NEVER
    )


def check_problem_policies(policies: dict[str, Any]) -> None:
    """Per-problem overrides use the assignment's keys; refuse anything else with a message naming it."""
    if not isinstance(policies, dict):
        raise Invalid("problem_policies is an object: problem id -> settings", field="problem_policies")
    for problem_id, settings in policies.items():
        where = f"problem_policies.{problem_id}"
        if not isinstance(settings, dict) or set(settings) - _PROBLEM_KEYS:
            raise Invalid(f"{where}: allowed keys are {sorted(_PROBLEM_KEYS)}", field="problem_policies")
        attempts = settings.get("max_attempts")
        if attempts is not None and (not isinstance(attempts, int) or isinstance(attempts, bool) or attempts < 1):
            raise Invalid(f"{where}.max_attempts must be a whole number of at least 1", field="problem_policies")
        cooldown = settings.get("cooldown_s", 0)
        if not isinstance(cooldown, int) or isinstance(cooldown, bool) or not 0 <= cooldown <= 7 * 86400:
            raise Invalid(f"{where}.cooldown_s is whole seconds, 0 to 604800", field="problem_policies")
        decay = settings.get("decay_per_attempt", 0.0)
        if not isinstance(decay, int | float) or isinstance(decay, bool) or not 0.0 <= decay <= 1.0:
            raise Invalid(f"{where}.decay_per_attempt is a fraction between 0 and 1", field="problem_policies")
        if "counts" in settings and settings["counts"] not in set(Counts):
            raise Invalid(f"{where}.counts must be best or last", field="problem_policies")
        release = settings.get("release", {})
        if not isinstance(release, dict) or any(k not in RELEASED or v not in set(Release) for k, v in release.items()):
            raise Invalid(
                f"{where}.release maps {list(RELEASED)} to one of {[r.value for r in Release]}",
                field="problem_policies",
            )
