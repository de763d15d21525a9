"""One student's work in an offering, for its staff: their gradebook row (the counted score per problem, the
total) and every submission to each assignment with its grade, both from the same counted attempts."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import MemberRole, Membership, Offering
from app.courses.permissions import Action
from app.courses.policy import policy_for
from app.errors import NotFound
from app.gradebook.service import counted_rule
from app.problemsets.service import spec_of
from app.submissions.attempts import Column, best_attempts, columns, load_attempts
from app.submissions.models import Submission
from app.users.models import User
from graders.results import Verdict


@dataclass(frozen=True)
class WorkRow:
    submission_id: int
    problem_id: str
    attempt: int
    status: str
    submitted_at: datetime
    auto_score: float | None
    manual_score: float | None
    final_score: float | None
    max_score: float | None
    pending_manual: bool
    counts: bool  # the attempt the gradebook counts (best or last, per the assignment)
    manual_feedback: str | None


@dataclass(frozen=True)
class ProblemTotal:
    """One problem of the student's gradebook row: what the gradebook counts for them there."""

    id: str
    title: str
    max_score: float
    attempts: int
    score: float | None  # the counted attempt's final score; None: no graded attempt
    pending_manual: bool  # the counted attempt awaits hand grading: left out of the total, as in the gradebook
    due_at: datetime | None  # the student's due date, overrides included


@dataclass
class AssignmentWork:
    slug: str
    title: str
    total: float
    max_total: float
    problems: dict[str, str]  # id -> title, in set order
    rows: list[WorkRow] = field(default_factory=list)
    cells: list[ProblemTotal] = field(default_factory=list)  # the row of the gradebook, in set order


@dataclass
class StudentWork:
    offering: Offering
    student: User
    member: Membership
    assignments: list[AssignmentWork]


def student_work(session: Session, *, access: Access, offering_id: int, user_id: int) -> StudentWork:
    """A student's submissions across the offering's assignments; 404 outside the caller's offerings (needs the
    right to read others' submissions there) and for anyone who is not a student of this offering."""
    offering = courses.get_offering(session, access, offering_id, Action.READ_SUBMISSIONS)
    member = courses.member_of(session, offering.id, user_id)
    student = session.get(User, user_id)
    if member is None or member.role != MemberRole.STUDENT or student is None:
        raise NotFound(f"no student {user_id} in this offering", field="user")
    out = []
    for found in courses.visible_assignments(session, access, offering_id=offering.id):
        assignment = found.assignment
        version = courses.version_of(session, assignment)
        spec = spec_of(version)
        attempts = load_attempts(session, assignment, user_id=user_id)
        cols = columns(version, attempts)
        counted = {a.id for a in best_attempts(attempts, counted_rule(assignment, spec)).values()}
        subs = {
            s.id: s
            for s in session.scalars(
                select(Submission)
                .where(Submission.id.in_([a.id for a in attempts]))
                .options(selectinload(Submission.grade))
            )
        }
        rows = []
        for a in attempts:
            grade = subs[a.id].grade
            rows.append(
                WorkRow(
                    submission_id=a.id,
                    problem_id=a.problem_id,
                    attempt=a.attempt,
                    status=a.status,
                    submitted_at=subs[a.id].created_at,
                    auto_score=grade.auto_score if grade else None,
                    manual_score=grade.manual_score if grade else None,
                    final_score=a.final_score,
                    max_score=a.max_score,
                    pending_manual=grade is not None and grade.verdict == Verdict.PENDING_MANUAL,
                    counts=a.id in counted,
                    manual_feedback=grade.manual_feedback if grade else None,
                )
            )
        total = sum(r.final_score or 0.0 for r in rows if r.counts and not r.pending_manual)
        cells = [_problem_total(col, rows, policy_for(assignment, spec, col.id, member).due_at) for col in cols]
        out.append(
            AssignmentWork(
                slug=found.problem_set.slug,
                title=found.problem_set.title,
                total=round(total, 6),
                max_total=round(sum(c.max_score for c in cols), 6),
                problems={c.id: c.title for c in cols},
                rows=rows,
                cells=cells,
            )
        )
    return StudentWork(offering=offering, student=student, member=member, assignments=out)


def _problem_total(col: Column, rows: list[WorkRow], due_at: datetime | None) -> ProblemTotal:
    mine = [r for r in rows if r.problem_id == col.id]
    top = next((r for r in mine if r.counts), None)
    return ProblemTotal(
        id=col.id,
        title=col.title,
        max_score=col.max_score,
        attempts=len(mine),
        score=top.final_score if top else None,
        pending_manual=top is not None and top.pending_manual,
        due_at=due_at,
    )
