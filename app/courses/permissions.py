"""The permission matrix: which course role may do what in its offering. Every endpoint and page asks here.

An instructor or TA of offering A has no role in offering B, so nothing of B is reachable (404, never a hint that
it exists). Admins act as instructors everywhere (with the 'instructor' scope when they use a token).
"""

from __future__ import annotations

from enum import StrEnum

from app.courses.models import MemberRole


class Action(StrEnum):
    VIEW = "view"  # the offering, its open assignments and their problems
    SUBMIT = "submit"
    VIEW_UNRELEASED = "view_unreleased"  # assignments before open_at, hidden sets, sealed results, others' work
    READ_SUBMISSIONS = "read_submissions"  # everyone's submissions in the offering
    GRADEBOOK = "gradebook"  # the gradebook, its CSV and the statistics
    GRADE = "grade"  # manual grades and regrades
    OVERRIDES = "overrides"  # extensions and extra attempts (TAs only where the offering allows it)
    ASSIGNMENTS = "assignments"  # assign sets, dates, attempt and release policies
    ROSTER = "roster"  # memberships, CSV import, join code
    UPLOAD = "upload"  # upload sets into the offering
    EDIT_OFFERING = "edit_offering"
    WEBHOOKS = "webhooks"  # the offering's webhook endpoints: register, list, delivery log (their secrets sign grades)


A = Action
MATRIX: dict[MemberRole, frozenset[Action]] = {
    MemberRole.INSTRUCTOR: frozenset(Action),
    MemberRole.TA: frozenset({A.VIEW, A.SUBMIT, A.VIEW_UNRELEASED, A.READ_SUBMISSIONS, A.GRADEBOOK, A.GRADE}),
    MemberRole.OBSERVER: frozenset({A.VIEW, A.GRADEBOOK}),
    MemberRole.STUDENT: frozenset({A.VIEW, A.SUBMIT}),
}
STAFF_ROLES = frozenset({MemberRole.INSTRUCTOR, MemberRole.TA})


def allowed(role: MemberRole | None, action: Action, *, ta_can_override: bool = False) -> bool:
    """Whether ``role`` may do ``action``; None (no active membership) may do nothing."""
    if role is None:
        return False
    if action is Action.OVERRIDES and role is MemberRole.TA:
        return ta_can_override
    return action in MATRIX[role]
