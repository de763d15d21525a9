"""Submissions: store first (status queued), grade later in a worker; read back filtered by visibility."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from app.config import Settings
from app.db import utcnow
from app.errors import Conflict, Forbidden, Invalid, NotFound
from app.problemsets.models import ProblemSet, ProblemSetVersion
from app.problemsets.service import get_latest, loaded_version
from app.submissions.lateness import is_closed
from app.submissions.models import Source, Status, Submission
from app.users.models import User
from graders.grade import check_payload
from graders.kinds import PayloadInvalid, kind_of


def create(
    session: Session,
    *,
    settings: Settings,
    user: User,
    problem_set: str,
    problem_id: str,
    answers: dict[str, str] | None = None,
    code: str | None = None,
    source: Source = Source.API,
    idempotency_key: str | None = None,
    staff: bool | None = None,
    not_before: datetime | None = None,
) -> tuple[Submission, bool]:
    """Validate and store a submission as queued. Returns (submission, created); a repeated key returns the first.

    ``staff`` (default: the user's role) lets instructors submit to hidden and closed sets; a token without the
    instructor scope passes False. ``not_before`` keeps the workers off the new row until then (the API grades
    fill-in answers itself meanwhile, app/worker/inline.py); a queued row's ``lease_until`` is its "not before".
    """
    staff = user.is_staff if staff is None else staff
    if idempotency_key:
        existing = session.scalar(
            select(Submission).where(Submission.user_id == user.id, Submission.idempotency_key == idempotency_key)
        )
        if existing is not None:
            return _replay(existing, problem_set, problem_id, answers, code)
    version = get_latest(session, problem_set, include_hidden=staff)
    spec = loaded_version(settings, version).spec
    if is_closed(spec, utcnow()) and not staff:
        due = spec.due_at.astimezone(UTC) if spec.due_at else None
        raise Forbidden(f"problem set {problem_set!r} is closed: it was due {due:%Y-%m-%d %H:%M} UTC")
    problem = spec.problem(problem_id)
    if problem is None:
        raise Invalid(f"unknown problem {problem_id!r} in set {problem_set!r}", field="problem")
    try:
        payload = check_payload(problem, answers=answers, code=code)
    except PayloadInvalid as exc:
        raise Invalid(exc.message, field=exc.field) from exc
    attempt = 1 + (
        session.scalar(
            select(func.count())
            .select_from(Submission)
            .join(ProblemSetVersion)
            .where(
                Submission.user_id == user.id,
                Submission.problem_id == problem_id,
                ProblemSetVersion.problem_set_id == version.problem_set_id,
            )
        )
        or 0
    )
    submission = Submission(
        user_id=user.id,
        problem_set_version=version,  # loaded already: grading it inline needs no query for it
        problem_id=problem_id,
        kind=kind_of(problem).takes,
        payload=payload,
        source=source,
        attempt=attempt,
        idempotency_key=idempotency_key,
        lease_until=not_before,
    )
    session.add(submission)
    try:
        session.commit()
    except IntegrityError:
        # Two requests with the same Idempotency-Key raced; the other one won.
        session.rollback()
        if idempotency_key:
            winner = session.scalar(
                select(Submission).where(Submission.user_id == user.id, Submission.idempotency_key == idempotency_key)
            )
            if winner is not None:
                return winner, False
        raise
    return submission, True


def _replay(
    existing: Submission, problem_set: str, problem_id: str, answers: dict[str, str] | None, code: str | None
) -> tuple[Submission, bool]:
    same_set = existing.problem_set_version.problem_set.slug == problem_set
    same = (
        same_set
        and existing.problem_id == problem_id
        and json.dumps(existing.payload, sort_keys=True)
        == json.dumps({"code": code} if code is not None else {"answers": answers}, sort_keys=True)
    )
    if not same:
        raise Conflict("this Idempotency-Key was already used for a different submission", field="Idempotency-Key")
    return existing, False


def get(session: Session, *, submission_id: int, user: User, staff: bool | None = None) -> Submission:
    """A submission with its checks and grade; students only see their own (others are 404, not 403)."""
    staff = user.is_staff if staff is None else staff
    submission = session.scalar(
        select(Submission)
        .where(Submission.id == submission_id)
        .options(selectinload(Submission.checks), selectinload(Submission.grade))
    )
    if submission is None or (submission.user_id != user.id and not staff):
        raise NotFound(f"no submission {submission_id}", field="submission_id")
    return submission


def list_for(
    session: Session,
    *,
    user: User,
    problem_set: str | None = None,
    problem_id: str | None = None,
    user_id: int | None = None,
    limit: int = 50,
    offset: int = 0,
    staff: bool | None = None,
) -> list[Submission]:
    staff = user.is_staff if staff is None else staff
    query = (
        select(Submission)
        .options(selectinload(Submission.grade), selectinload(Submission.checks))
        .order_by(Submission.id.desc())
        .limit(limit)
        .offset(offset)
    )
    if not staff:
        query = query.where(Submission.user_id == user.id)
    elif user_id is not None:
        query = query.where(Submission.user_id == user_id)
    if problem_set is not None:
        query = query.join(ProblemSetVersion).join(ProblemSet).where(ProblemSet.slug == problem_set)
    if problem_id is not None:
        query = query.where(Submission.problem_id == problem_id)
    return list(session.scalars(query))


def is_finished(submission: Submission) -> bool:
    return submission.status in (Status.GRADED, Status.ERROR)


def is_revealed(visibility: str, *, viewer_is_staff: bool, due_at: datetime | None, now: datetime) -> bool:
    """Whether a student may see a check's outcome now.

    Feedback is student-safe by construction (checks never print hidden inputs unless marked visible), so visible
    and hidden checks are both reported; "after_due" checks stay sealed until the set's due date.
    """
    if viewer_is_staff or visibility != "after_due":
        return True
    return due_at is not None and now >= due_at
