"""Gradebook: each student's best final score per problem, CSV export, regrades and manual grades."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.orm import Session
from sqlalchemy.orm.exc import StaleDataError

from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Assignment
from app.courses.permissions import Action
from app.courses.policy import policy_for
from app.errors import N_, Conflict, Invalid, NotFound
from app.gradebook.schemas import AwaitingManual, Gradebook, GradeCell, ProblemColumn, StudentRow
from app.lti.passback import queue_score
from app.problemsets.service import spec_of
from app.submissions.attempts import EPS, best_attempts, columns, load_attempts, students
from app.submissions.models import Grade, Status, Submission
from app.users.models import User
from app.webhooks.service import enqueue_event
from graders.model import ProblemSetSpec


def counted_rule(assignment: Assignment, spec: ProblemSetSpec) -> Callable[[str], str]:
    """problem id -> "best" or "last", from the assignment's attempt policy."""
    return lambda problem_id: policy_for(assignment, spec, problem_id, None).counts


def gradebook(session: Session, *, access: Access, slug: str, offering_id: int | None = None) -> Gradebook:
    """Students × problems of an assignment in one of the caller's offerings: the counted final score (best or
    last attempt, any version), attempts, totals. 404 outside the caller's offerings."""
    found = courses.resolve(session, access, slug, offering_id=offering_id, action=Action.GRADEBOOK)
    assignment = found.assignment
    version = courses.version_of(session, assignment)
    attempts = load_attempts(session, assignment)
    cols = columns(version, attempts)
    best = best_attempts(attempts, counted_rule(assignment, spec_of(version)))
    counts = Counter((a.user_id, a.problem_id) for a in attempts)
    pending = Counter((a.user_id, a.problem_id) for a in attempts if a.final_score is None)
    members = {m.user_id: m for m in courses.members(session, found.assignment.offering) if m.user_id is not None}
    rows = []
    for user in students(session, assignment.offering_id, {a.user_id for a in attempts}):
        cells = {}
        for col in cols:
            top = best.get((user.id, col.id))
            cells[col.id] = GradeCell(
                best_score=top.final_score if top else None,
                max_score=col.max_score,
                attempts=counts[(user.id, col.id)],
                pending=pending[(user.id, col.id)],
                best_submission_id=top.id if top else None,
                variant_seed=top.variant_seed if top else None,
            )
        rows.append(
            StudentRow(
                user_id=user.id,
                email=user.email,
                # The roster's name (what the instructor imported) first, else the account's own.
                display_name=(members[user.id].name if user.id in members else "") or user.display_name,
                student_id=members[user.id].student_id if user.id in members else "",
                section=members[user.id].section if user.id in members else "",
                cells=cells,
                total=round(sum(c.best_score or 0.0 for c in cells.values()), 6),
                max_total=round(sum(col.max_score for col in cols), 6),
            )
        )
    return Gradebook(
        problem_set=slug,
        offering=assignment.offering_id,
        policy=assignment.counts,
        title=version.problem_set.title,
        version=version.number,
        problems=[ProblemColumn(id=c.id, title=c.title, kind=c.kind, max_score=c.max_score) for c in cols],
        students=rows,
    )


def to_csv(book: Gradebook) -> str:
    """One row per student: email, display name, student id, section, one column per problem (empty: no graded
    attempt), total; the layout Canvas and Moodle gradebook imports map by email or student id. After the total,
    a "q4 variant" column per problem whose counted attempts answered variants: the seed each answered."""
    varied = _varied([book])
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(["email", "display_name", "student_id", "section", *(p.id for p in book.problems), "total",
                     *(f"{pid} variant" for _, pid in varied)])  # fmt: skip
    for row in book.students:
        scores = [_number(row.cells[p.id].best_score) for p in book.problems]
        who = [csv_text(v) for v in (row.email, row.display_name, row.student_id, row.section)]
        writer.writerow([*who, *scores, _number(row.total), *(_seed(row.cells[pid].variant_seed) for _, pid in varied)])
    return out.getvalue()


def _varied(books: list[Gradebook]) -> list[tuple[Gradebook, str]]:
    """(book, problem id) of each problem some counted attempt of answered a variant, in column order."""
    return [
        (book, p.id)
        for book in books
        for p in book.problems
        if any(row.cells[p.id].variant_seed is not None for row in book.students)
    ]


def _seed(seed: int | None) -> str:
    return "" if seed is None else str(seed)


def offering_csv(books: list[Gradebook]) -> str:
    """One row per student of the offering: email, name, student id, section, a "set/problem" column per problem of
    each assignment, total, then a "set/problem variant" column per problem answered in variants (as ``to_csv``);
    a student missing from one book (no attempt there) gets empty cells."""
    columns = [(book, p.id) for book in books for p in book.problems]
    people: dict[int, StudentRow] = {}
    for book in books:
        for row in book.students:
            people.setdefault(row.user_id, row)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    varied = _varied(books)
    writer.writerow(
        ["email", "display_name", "student_id", "section", *(f"{b.problem_set}/{pid}" for b, pid in columns), "total",
         *(f"{b.problem_set}/{pid} variant" for b, pid in varied)]
    )  # fmt: skip
    for user_id, person in sorted(people.items(), key=lambda kv: kv[1].email):
        cells = []
        total = 0.0
        for book, pid in columns:
            found = next((r for r in book.students if r.user_id == user_id), None)
            score = found.cells[pid].best_score if found is not None else None
            total += score or 0.0
            cells.append(_number(score))
        writer.writerow(
            [
                csv_text(person.email),
                csv_text(person.display_name),
                csv_text(person.student_id),
                csv_text(person.section),
                *cells,
                _number(round(total, 6)),
                *(_seed(_cell_seed(book, user_id, pid)) for book, pid in varied),
            ]
        )
    return out.getvalue()


def _cell_seed(book: Gradebook, user_id: int, problem_id: str) -> int | None:
    found = next((r for r in book.students if r.user_id == user_id), None)
    return found.cells[problem_id].variant_seed if found is not None else None


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}".rstrip("0").rstrip(".")


def csv_text(value: str) -> str:
    # Spreadsheets run a cell starting with = + - @ as a formula; a leading quote keeps names as plain text.
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def awaiting_manual(
    session: Session, *, access: Access, slug: str, offering_id: int | None = None
) -> list[AwaitingManual]:
    """Each student's latest graded attempt at a problem with a rubric that nobody has scored by hand yet."""
    found = courses.resolve(session, access, slug, offering_id=offering_id, action=Action.GRADE)
    version = courses.version_of(session, found.assignment)
    attempts = load_attempts(session, found.assignment)
    rubric = {c.id for c in columns(version, attempts) if c.rubric_points > 0}
    latest = {(a.user_id, a.problem_id): a for a in attempts if a.final_score is not None and a.problem_id in rubric}
    emails = {u.id: u.email for u in students(session, found.assignment.offering_id, {a.user_id for a in attempts})}
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


def progress(session: Session, *, user_id: int, assignment: Assignment) -> dict[str, Progress]:
    """One user's standing per problem of an assignment (for their own pages): attempts, the counted score, the
    latest attempt. Scores here are the user's own; pages seal them per the release policy."""
    attempts = load_attempts(session, assignment, user_id=user_id)
    best = best_attempts(attempts, counted_rule(assignment, spec_of(courses.version_of(session, assignment))))
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


def _graded_here(session: Session, access: Access, submission_id: int, *, lock: bool = False) -> Submission:
    """A submission the caller may grade (staff of its offering); 404 for anyone else."""
    sub = session.get(Submission, submission_id, with_for_update=lock)
    offering_id = sub.assignment.offering_id if sub is not None and sub.assignment else None
    if sub is None or not (access.can(offering_id, Action.GRADE) or (offering_id is None and access.is_admin)):
        raise NotFound(f"no submission {submission_id}", field="submission_id")
    return sub


def regrade(session: Session, *, access: Access, submission_id: int) -> Submission:
    """Put a submission back in the queue; the worker replaces its checks and grade when it is done."""
    sub = _graded_here(session, access, submission_id, lock=True)
    requeue(sub)
    # Committed here, before the caller wakes a worker, so the worker finds the row queued.
    session.commit()
    return sub


def requeue(sub: Submission) -> None:
    """Back to the queue (the caller commits, then wakes a worker); the grade stays until the new one replaces it."""
    # Clearing the claim also makes a worker still grading the old claim drop its result (it checks claimed_by).
    sub.status, sub.grading_attempts, sub.claimed_by, sub.lease_until, sub.error = Status.QUEUED, 0, None, None, None


def rubric_points(sub: Submission) -> float:
    """The most an instructor may award by hand: the rubric points of the problem at the submission's version."""
    for problem in sub.problem_set_version.spec.get("problems", []):
        if problem.get("id") == sub.problem_id:
            return sum(float(item["points"]) for item in problem.get("rubric", []))
    return 0.0


def manual_grade(
    session: Session, *, access: Access, submission_id: int, grader: User, manual_score: float, feedback: str
) -> tuple[Grade, float]:
    """Record an instructor's score and feedback; returns (grade, the rubric maximum it was checked against)."""
    sub = _graded_here(session, access, submission_id)
    if sub.grade is None:
        raise NotFound(N_("submission %(id)s has no grade yet; wait for automatic grading"), field="submission_id",
                       params={"id": submission_id})  # fmt: skip
    limit = rubric_points(sub)
    if not 0.0 <= manual_score <= limit + EPS:
        if limit == 0:
            raise Invalid(N_("manual_score must be between 0 and 0 (this problem has no rubric, so it must be 0)"),
                          field="manual_score")  # fmt: skip
        raise Invalid(N_("manual_score must be between 0 and %(limit)s (the rubric is worth %(limit)s)"),
                      field="manual_score", params={"limit": f"{limit:g}"})  # fmt: skip
    sub.grade.manual_score = manual_score
    sub.grade.manual_feedback = feedback.strip() or None
    sub.grade.manual_graded_by_id = grader.id
    sub.grade.settle_pending()
    try:
        # Inside the try: the event's query flushes the grade's update, which is where a regrade's race shows.
        enqueue_event(session, user_id=sub.user_id, event_type="grade.manual_updated", submission_id=sub.id)
        queue_score(session, user_id=sub.user_id, assignment_id=sub.assignment_id)  # LMS grade passback
        session.commit()
    except StaleDataError as exc:
        # A regrade finished between our read and our write and replaced the grade row: a conflict, not a 500.
        session.rollback()
        raise Conflict(
            N_("submission %(id)s was regraded while this grade was saved; reload it and grade again"),
            params={"id": submission_id},
            field="submission_id",
            location="path",
        ) from exc
    return sub.grade, limit
