"""Bulk regrade of one problem: preview which submissions a selection holds (and their scores now), requeue them
as one batch, and follow the batch's progress (how many are graded again, how many scores changed)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Assignment
from app.courses.permissions import Action
from app.errors import Invalid, NotFound
from app.gradebook.attempts import EPS
from app.gradebook.models import RegradeBatch
from app.gradebook.service import requeue
from app.submissions.models import Status, Submission, round_score
from app.users.models import User

NO_GRADE = "no grade"


@dataclass
class Selection:
    assignment: Assignment
    problem_id: str
    since: datetime | None
    below_full: bool
    submissions: list[Submission]  # graded or failed ones, oldest first, grades loaded
    in_flight: int  # queued or running already: left out (they are about to be graded anyway)

    def by_score(self) -> list[tuple[str, int]]:
        """How many selected submissions have each current final score (highest first; "no grade" last)."""
        counts = Counter(_score_label(s) for s in self.submissions)
        scores = sorted((k for k in counts if k != NO_GRADE), key=float, reverse=True)
        return [(k, counts[k]) for k in scores] + ([(NO_GRADE, counts[NO_GRADE])] if NO_GRADE in counts else [])


def _final(sub: Submission) -> float | None:
    return round_score(sub.grade.final_score) if sub.grade is not None else None


def _score_label(sub: Submission) -> str:
    score = _final(sub)
    return NO_GRADE if score is None else f"{score:g}"


def _below_full(sub: Submission) -> bool:
    return sub.grade is None or sub.status == Status.ERROR or sub.grade.final_score < sub.grade.max_score - EPS


def select_for_regrade(
    session: Session,
    *,
    access: Access,
    slug: str,
    offering_id: int | None,
    problem_id: str,
    since: datetime | None = None,
    below_full: bool = False,
) -> Selection:
    """The submissions to ``problem_id`` of the caller's assignment of ``slug`` (staff who may grade there; 404
    elsewhere), made at or after ``since``, and only those below full marks or failed when ``below_full``."""
    found = courses.resolve(session, access, slug, offering_id=offering_id, action=Action.GRADE)
    problems = {p["id"] for p in courses.version_of(session, found.assignment).spec.get("problems", [])}
    if problem_id not in problems:
        raise Invalid(f"no problem {problem_id!r} in {slug!r}; expected one of {sorted(problems)}", field="problem")
    query = (
        select(Submission)
        .where(Submission.assignment_id == found.assignment.id, Submission.problem_id == problem_id)
        .options(selectinload(Submission.grade))
        .order_by(Submission.id)
    )
    if since is not None:
        query = query.where(Submission.created_at >= since)
    rows = list(session.scalars(query))
    settled = [s for s in rows if s.status in (Status.GRADED, Status.ERROR)]
    return Selection(
        assignment=found.assignment,
        problem_id=problem_id,
        since=since,
        below_full=below_full,
        submissions=[s for s in settled if _below_full(s)] if below_full else settled,
        in_flight=len(rows) - len(settled),
    )


def start(session: Session, *, selection: Selection, user: User) -> RegradeBatch:
    """Requeue every selected submission and record the batch with each score before; committed here, so the
    caller can wake the workers (one job per submission)."""
    if not selection.submissions:
        raise Invalid("the selection holds no submission to regrade", field="problem")
    for sub in selection.submissions:
        requeue(sub)
    batch = RegradeBatch(
        assignment_id=selection.assignment.id,
        problem_id=selection.problem_id,
        created_by_id=user.id,
        filters={"since": selection.since.isoformat() if selection.since else None, "below_full": selection.below_full},
        before={str(s.id): _final(s) for s in selection.submissions},
    )
    session.add(batch)
    session.commit()
    return batch


@dataclass
class Change:
    submission_id: int
    before: float | None
    after: float | None


@dataclass
class BatchProgress:
    batch: RegradeBatch
    slug: str
    offering_id: int
    total: int
    by_status: dict[str, int]
    changes: list[Change]  # graded again with another score than before
    unchanged: int

    @property
    def done(self) -> int:
        return self.by_status.get(Status.GRADED, 0) + self.by_status.get(Status.ERROR, 0)

    @property
    def finished(self) -> bool:
        return self.done >= self.total

    @property
    def up(self) -> int:
        return sum(1 for c in self.changes if (c.after or 0.0) > (c.before or 0.0))

    @property
    def down(self) -> int:
        return len(self.changes) - self.up


def batch_progress(session: Session, *, access: Access, batch_id: int) -> BatchProgress:
    """Where a batch stands: each submission's status now, and for those graded again, whether the score moved.
    Staff who may grade in its offering only (404 for anyone else)."""
    batch = session.get(RegradeBatch, batch_id)
    assignment = session.get(Assignment, batch.assignment_id) if batch is not None else None
    if batch is None or assignment is None or not access.can(assignment.offering_id, Action.GRADE):
        raise NotFound(f"no regrade {batch_id}", field="batch")
    ids = [int(k) for k in batch.before]
    subs = session.scalars(select(Submission).where(Submission.id.in_(ids)).options(selectinload(Submission.grade)))
    by_status: Counter[str] = Counter()
    changes, unchanged = [], 0
    for sub in subs:
        by_status[sub.status] += 1
        if sub.status not in (Status.GRADED, Status.ERROR):
            continue
        before, after = batch.before[str(sub.id)], _final(sub)
        same = before is None if after is None else before is not None and abs(before - after) <= EPS
        if same:
            unchanged += 1
        else:
            changes.append(Change(sub.id, before, after))
    return BatchProgress(
        batch=batch,
        slug=assignment.problem_set.slug,
        offering_id=assignment.offering_id,
        total=len(ids),
        by_status=dict(by_status),
        changes=sorted(changes, key=lambda c: c.submission_id),
        unchanged=unchanged,
    )
