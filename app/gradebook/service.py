"""Gradebook: each student's best final score per problem, CSV export, regrades and manual grades."""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass

from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from app.errors import Conflict, Invalid, NotFound
from app.gradebook.attempts import EPS, best_attempts, columns, load_attempts, students
from app.gradebook.schemas import AwaitingManual, Gradebook, GradeCell, ProblemColumn, StudentRow
from app.problemsets.service import get_latest
from app.submissions.models import Grade, Status, Submission
from app.users.models import User
from app.webhooks.service import enqueue_event


def gradebook(session: Session, *, slug: str) -> Gradebook:
    """Students × problems of a set: best final score over all attempts (any version), attempts, totals."""
    version = get_latest(session, slug, include_hidden=True)
    attempts = load_attempts(session, version.problem_set_id)
    cols = columns(version, attempts)
    best = best_attempts(attempts)
    counts = Counter((a.user_id, a.problem_id) for a in attempts)
    pending = Counter((a.user_id, a.problem_id) for a in attempts if a.final_score is None)
    rows = []
    for user in students(session, {a.user_id for a in attempts}):
        cells = {}
        for col in cols:
            top = best.get((user.id, col.id))
            cells[col.id] = GradeCell(
                best_score=top.final_score if top else None,
                max_score=col.max_score,
                attempts=counts[(user.id, col.id)],
                pending=pending[(user.id, col.id)],
                best_submission_id=top.id if top else None,
            )
        rows.append(
            StudentRow(
                user_id=user.id,
                email=user.email,
                display_name=user.display_name,
                cells=cells,
                total=round(sum(c.best_score or 0.0 for c in cells.values()), 6),
                max_total=round(sum(col.max_score for col in cols), 6),
            )
        )
    return Gradebook(
        problem_set=slug,
        title=version.problem_set.title,
        version=version.number,
        problems=[ProblemColumn(id=c.id, title=c.title, kind=c.kind, max_score=c.max_score) for c in cols],
        students=rows,
    )


def to_csv(book: Gradebook) -> str:
    """One row per student: email, display name, one column per problem (empty: no graded attempt), total."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["email", "display_name", *(p.id for p in book.problems), "total"])
    for row in book.students:
        scores = [_number(row.cells[p.id].best_score) for p in book.problems]
        writer.writerow([_text(row.email), _text(row.display_name), *scores, _number(row.total)])
    return out.getvalue()


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def _text(value: str) -> str:
    # Spreadsheets run a cell starting with = + - @ as a formula; a leading quote keeps names as plain text.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def awaiting_manual(session: Session, *, slug: str) -> list[AwaitingManual]:
    """Each student's latest graded attempt at a problem with a rubric that nobody has scored by hand yet."""
    version = get_latest(session, slug, include_hidden=True)
    attempts = load_attempts(session, version.problem_set_id)
    rubric = {c.id for c in columns(version, attempts) if c.rubric_points > 0}
    latest = {(a.user_id, a.problem_id): a for a in attempts if a.final_score is not None and a.problem_id in rubric}
    emails = {u.id: u.email for u in students(session, {a.user_id for a in attempts})}
    return [
        AwaitingManual(
            submission_id=a.id,
            user_id=a.user_id,
            email=emails.get(a.user_id, ""),
            problem=a.problem_id,
            attempt=a.attempt,
        )
        for a in sorted(latest.values(), key=lambda a: a.id)
        if a.manual_score is None
    ]


@dataclass(frozen=True)
class Progress:
    attempts: int
    best_score: float | None
    best_submission_id: int | None
    latest_submission_id: int
    latest_status: str


def progress(session: Session, *, user_id: int, problem_set_id: int) -> dict[str, Progress]:
    """One user's standing per problem of a set (for their own pages): attempts, best score, latest attempt."""
    attempts = load_attempts(session, problem_set_id, user_id=user_id)
    best = best_attempts(attempts)
    out: dict[str, Progress] = {}
    for a in attempts:  # oldest first, so the last one seen per problem is the latest
        top = best.get((user_id, a.problem_id))
        out[a.problem_id] = Progress(
            attempts=out[a.problem_id].attempts + 1 if a.problem_id in out else 1,
            best_score=top.final_score if top else None,
            best_submission_id=top.id if top else None,
            latest_submission_id=a.id,
            latest_status=a.status,
        )
    return out


def regrade(session: Session, *, submission_id: int) -> Submission:
    """Put a submission back in the queue; the worker replaces its checks and grade when it is done."""
    sub = session.get(Submission, submission_id, with_for_update=True)
    if sub is None:
        raise NotFound(f"no submission {submission_id}", field="submission_id")
    # Clearing the claim also makes a worker still grading the old claim drop its result (it checks claimed_by).
    sub.status, sub.grading_attempts, sub.claimed_by, sub.lease_until, sub.error = Status.QUEUED, 0, None, None, None
    # Committed here, before the caller wakes a worker, so the worker finds the row queued.
    session.commit()
    return sub


def rubric_points(sub: Submission) -> float:
    """The most an instructor may award by hand: the rubric points of the problem at the submission's version."""
    for problem in sub.problem_set_version.spec.get("problems", []):
        if problem.get("id") == sub.problem_id:
            return sum(float(item["points"]) for item in problem.get("rubric", []))
    return 0.0


def manual_grade(
    session: Session, *, submission_id: int, grader: User, manual_score: float, feedback: str
) -> tuple[Grade, float]:
    """Record an instructor's score and feedback; returns (grade, the rubric maximum it was checked against)."""
    sub = session.get(Submission, submission_id)
    if sub is None:
        raise NotFound(f"no submission {submission_id}", field="submission_id")
    if sub.grade is None:
        raise NotFound(
            f"submission {submission_id} has no grade yet; wait for automatic grading", field="submission_id"
        )
    limit = rubric_points(sub)
    if not 0.0 <= manual_score <= limit + EPS:
        reason = "this problem has no rubric, so it must be 0" if limit == 0 else f"the rubric is worth {limit:g}"
        raise Invalid(f"manual_score must be between 0 and {limit:g} ({reason})", field="manual_score")
    sub.grade.manual_score = manual_score
    sub.grade.manual_feedback = feedback.strip() or None
    sub.grade.manual_graded_by_id = grader.id
    sub.grade.settle_pending()
    enqueue_event(session, user_id=sub.user_id, event_type="grade.manual_updated", submission_id=sub.id)
    try:
        session.commit()
    except StaleDataError as exc:
        # A regrade finished between our read and our write and replaced the grade row: a conflict, not a 500.
        session.rollback()
        raise Conflict(
            f"submission {submission_id} was regraded while this grade was saved; reload it and grade again",
            field="submission_id",
            location="path",
        ) from exc
    return sub.grade, limit
