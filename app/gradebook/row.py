"""One student's row of an offering's gradebook: per assignment and problem, the counted score and attempts, sealed
by the release policy for the viewer exactly as every other reader is (app.submissions.release), and the
student's submissions (the student themself, or staff who may read submissions). The staff page of a student
shows the same row from app.gradebook.student_work, above every submission."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Assignment, Membership, Offering
from app.courses.permissions import Action
from app.errors import NotFound
from app.gradebook.service import progress
from app.problemsets.service import spec_of
from app.submissions.attempts import columns, load_attempts
from app.submissions.models import Submission
from app.submissions.release import seal_of


@dataclass(frozen=True)
class ProblemCell:
    id: str
    title: str
    max_score: float
    attempts: int
    score: float | None  # the counted score; None: no graded attempt, or sealed
    sealed: bool  # the score is not released to the viewer yet
    due_at: datetime | None  # the viewer's (the student's) due date, overrides included


@dataclass(frozen=True)
class AssignmentRow:
    assignment: Assignment
    title: str
    problems: list[ProblemCell]
    submissions: list[Submission]  # newest first

    @property
    def total(self) -> float:
        return round(sum(c.score or 0.0 for c in self.problems), 6)

    @property
    def max_total(self) -> float:
        return round(sum(c.max_score for c in self.problems), 6)

    @property
    def any_sealed(self) -> bool:
        return any(c.sealed for c in self.problems)


def student_row(
    session: Session, access: Access, offering: Offering, *, user_id: int
) -> tuple[Membership, list[AssignmentRow]]:
    """``user_id``'s row: for themself, or for staff of the offering who may read submissions; 404 otherwise (a
    student asking for another student's row learns nothing of it)."""
    if user_id != access.user_id:
        access.require(offering.id, Action.READ_SUBMISSIONS, f"no student {user_id} in this offering")
    member = courses.member_of(session, offering.id, user_id)
    if member is None:
        raise NotFound(f"no student {user_id} in this offering", field="user")
    out = []
    for found in courses.visible_assignments(session, access, offering_id=offering.id):
        assignment = found.assignment
        version = courses.version_of(session, assignment)
        spec = spec_of(version)
        mine = progress(session, user_id=user_id, assignment=assignment)
        cells = []
        for col in columns(version, load_attempts(session, assignment, user_id=user_id)):
            seal = seal_of(session, access, assignment, spec, user_id=user_id, problem_id=col.id)
            standing = mine.get(col.id)
            score = standing.best_score if standing is not None else None
            cells.append(
                ProblemCell(
                    id=col.id,
                    title=col.title,
                    max_score=col.max_score,
                    attempts=standing.attempts if standing is not None else 0,
                    score=score if seal.scores else None,
                    sealed=not seal.scores and score is not None,
                    due_at=seal.due_at,
                )
            )
        subs = list(
            session.scalars(
                select(Submission)
                .where(Submission.user_id == user_id, Submission.assignment_id == assignment.id)
                .order_by(Submission.id.desc())
            )
        )
        out.append(AssignmentRow(assignment, found.problem_set.title, cells, subs))
    return member, out
