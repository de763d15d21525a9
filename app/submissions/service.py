"""Submissions: store first (status queued), grade later in a worker; read back filtered by visibility."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Protocol

from sqlalchemy import and_, bindparam, or_, select
from sqlalchemy.orm import Session, selectinload

from app.config import Settings
from app.courses import clock
from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Assignment, Membership
from app.courses.permissions import Action
from app.courses.policy import Closed, InvalidFormat, policy_for
from app.db import utcnow
from app.errors import N_, Conflict, Invalid, NotFound
from app.problemsets.models import ProblemSet
from app.problemsets.service import loaded_version
from app.problemsets.variants import student_variant
from app.submissions.allocation import store_next_attempt
from app.submissions.attempts import variant_rounds
from app.submissions.models import CheckResultRow, Grade, Source, Status, Submission
from app.submissions.notebook import require_entrypoints
from app.submissions.penalties import Penalties, penalties_of
from app.users.models import User
from graders.grade import check_payload, format_errors
from graders.kinds import PayloadInvalid
from graders.problemset.loader import LoadedSet
from graders.problemset.variants import Variant
from graders.results import GradeResult

# Built once: every post with an Idempotency-Key asks.
_BY_KEY = select(Submission).where(
    Submission.user_id == bindparam("user_id"), Submission.idempotency_key == bindparam("key")
)


@dataclass
class Stored:
    """What ``store`` did: the row, whether it is new, and what a caller needs to show it without reading again.

    ``graded``: it was graded in the request (``inline``) and stored with its grade; ``member`` and ``assignment``
    are the ones its policy was worked out with (the release seal needs the same).
    """

    submission: Submission
    created: bool
    graded: bool = False
    assignment: Assignment | None = None
    member: Membership | None = None


class GradesInline(Protocol):
    """What ``store`` asks to grade a submission in the request instead of the workers (app/worker/inline.py)."""

    def grade(
        self, loaded: LoadedSet, problem_id: str, payload: dict[str, Any], variant: Variant | None = None
    ) -> GradeResult | None:
        """The grade (against the student's ``variant``), when this process grades this problem itself now; None
        leaves the row to the workers."""

    def record(
        self, session: Session, sub: Submission, result: GradeResult, penalties: Penalties, *, offering_id: int
    ) -> list[CheckResultRow | Grade]:
        """Write the grade of the just-flushed ``sub`` in its transaction (not committed); the rows written."""

    def finished(
        self,
        sub: Submission,
        rows: list[CheckResultRow | Grade],
        result: GradeResult,
        loaded: LoadedSet,
        seconds: float,
    ) -> None:
        """After the commit: what the response shows, and wake those waiting for it."""


def create(
    session: Session,
    *,
    settings: Settings,
    user: User,
    access: Access,
    problem_set: str,
    problem_id: str,
    answers: dict[str, str] | None = None,
    code: str | None = None,
    source: Source = Source.API,
    idempotency_key: str | None = None,
    offering_id: int | None = None,
) -> tuple[Submission, bool]:
    """``store`` for the workers to grade: (submission, created)."""
    stored = store(session, settings=settings, user=user, access=access, problem_set=problem_set,
                   problem_id=problem_id, answers=answers, code=code, source=source,
                   idempotency_key=idempotency_key, offering_id=offering_id)  # fmt: skip
    return stored.submission, stored.created


def store(
    session: Session,
    *,
    settings: Settings,
    user: User,
    access: Access,
    problem_set: str,
    problem_id: str,
    answers: dict[str, str] | None = None,
    code: str | None = None,
    source: Source = Source.API,
    idempotency_key: str | None = None,
    offering_id: int | None = None,
    inline: GradesInline | None = None,
) -> Stored:
    """Validate and store a submission, queued for the workers or, with ``inline``, already graded.

    A repeated key returns the first. The set is resolved to the caller's assignment (``offering_id`` when it is
    assigned in several of theirs). Students are held to its dates and attempt policy; staff (test runs) are not.
    An answer that cannot be read is refused (InvalidFormat) before anything is stored, so it uses no attempt.

    With ``inline``, an answer whose kind grades in plain Python is graded before the row is written, and the row
    is inserted as graded with its checks and grade in one transaction: it is never queued, so no worker can take
    it, and a crash before the commit leaves nothing (the client's retry with its Idempotency-Key stores it once).
    When ``inline`` declines (code, no free slot, a grading that raised), the row is stored queued as before.
    """
    if idempotency_key:
        existing = session.scalar(_BY_KEY, {"user_id": user.id, "key": idempotency_key})
        if existing is not None:
            return Stored(*_replay(existing, problem_set, problem_id, answers, code))
    found = courses.resolve(session, access, problem_set, offering_id=offering_id, action=Action.SUBMIT)
    assignment = found.assignment
    staff = access.can(assignment.offering_id, Action.VIEW_UNRELEASED)
    version = courses.version_of(session, assignment)
    loaded = loaded_version(settings, version)
    spec = loaded.spec
    problem = spec.problem(problem_id)
    if problem is None:
        raise Invalid(N_("unknown problem %(problem)s in set %(set)s"), field="problem",
                      params={"problem": repr(problem_id), "set": repr(problem_set)})  # fmt: skip
    if code is not None:  # a notebook sent through the API: its entry points are checked once the problem is known
        require_entrypoints(code, list(getattr(problem, "entrypoints", None) or []))
    try:
        payload = check_payload(problem, answers=answers, code=code)
    except PayloadInvalid as exc:
        raise Invalid(exc.message, field=exc.field) from exc
    malformed = format_errors(problem, payload)
    if malformed:
        raise InvalidFormat(malformed)
    member = courses.member_of(session, assignment.offering_id, user.id)
    started = None if staff else clock.start(session, assignment, user.id)  # a first submission starts the clock
    policy = policy_for(assignment, spec, problem_id, member, started_at=started)
    if not staff and policy.is_closed(utcnow()):
        deadline = policy.deadline.astimezone(UTC) if policy.deadline else None
        if policy.time_ends_at is not None and policy.deadline == policy.time_ends_at:
            limit = assignment.time_limit_min
            raise Closed(
                N_("your time at problem set %(set)s ended at %(when)s (a time limit of %(minutes)s minutes from when "
                   "you first opened it)"),
                params={"set": repr(problem_set), "when": deadline, "minutes": limit},
            )  # fmt: skip
        raise Closed(N_("problem set %(set)s is closed: it was due %(when)s"),
                     params={"set": repr(problem_set), "when": deadline})  # fmt: skip

    # A parameterised problem: this student's own numbers, generated in the set's checker the first time.
    seed, variant = student_variant(session, settings, version=version, loaded=loaded, problem=problem,
                                    assignment_id=assignment.id, user_id=user.id,
                                    round_=variant_rounds(session, assignment, user.id).get(problem_id, 0),
                                    shared=assignment.shared_variant)  # fmt: skip
    if variant is not None:
        # Kept apart from the attempt's transaction: a conflict there rolls back and goes round again, and a
        # variant generated just now would go with it (the page would then have no key of this seed to show).
        session.commit()
    grading_started = time.perf_counter()
    result = inline.grade(loaded, problem_id, payload, variant) if inline is not None else None
    grading_s = time.perf_counter() - grading_started
    graded_at = utcnow() if result is not None else None

    def make(attempt: int) -> Submission:
        sub = Submission(
            user_id=user.id,
            problem_set_version=version,  # loaded already: showing it needs no query for it
            assignment_id=assignment.id,
            problem_id=problem_id,
            variant_seed=seed,
            payload=payload,
            source=source,
            attempt=attempt,
            idempotency_key=idempotency_key,
            created_at=utcnow(),
        )
        if result is not None:  # never queued: no worker ever sees it
            sub.status, sub.started_at, sub.graded_at = Status.GRADED, graded_at, graded_at
        return sub

    def idempotent_winner() -> Submission | None:
        if not idempotency_key:
            return None
        return session.scalar(_BY_KEY, {"user_id": user.id, "key": idempotency_key})

    rows: list[CheckResultRow | Grade] = []
    write_grade = None
    if inline is not None and result is not None:
        # The owner's policy as a worker's grading would see it (staff do not start the clock by submitting).
        owner = policy
        if staff:
            owner = policy_for(assignment, spec, problem_id, member,
                               started_at=clock.started_at(session, assignment, user.id))  # fmt: skip
        grader, graded = inline, result

        def write_grade(sub: Submission) -> None:
            session.flush()  # the row's id, for its checks and grade
            penalties = penalties_of(owner, created_at=sub.created_at, attempt=sub.attempt)
            rows[:] = grader.record(session, sub, graded, penalties, offering_id=assignment.offering_id)

    sub, created = store_next_attempt(
        session,
        make=make,
        user_id=user.id,
        assignment_id=assignment.id,
        problem_id=problem_id,
        policy=None if staff else policy,
        on_conflict=idempotent_winner,
        before_commit=write_grade,
    )
    graded_here = created and inline is not None and result is not None
    if graded_here:
        assert inline is not None and result is not None
        inline.finished(sub, rows, result, loaded, grading_s)
    return Stored(sub, created, graded_here, assignment, member)


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


def get(session: Session, *, submission_id: int, access: Access) -> Submission:
    """A submission with its checks and grade. Its owner sees it while still a member of its offering, staff of
    that offering always; anyone else gets 404 (not 403: they learn nothing of it)."""
    submission = session.scalar(
        select(Submission)
        .where(Submission.id == submission_id)
        .options(selectinload(Submission.checks), selectinload(Submission.grade), selectinload(Submission.assignment))
    )
    if submission is None or not may_read(submission, access):
        raise NotFound(f"no submission {submission_id}", field="submission_id")
    return submission


def may_read(submission: Submission, access: Access) -> bool:
    offering_id = submission.assignment.offering_id if submission.assignment else None
    if offering_id is None:  # a legacy row outside any offering: its owner and admins
        return submission.user_id == access.user_id or access.is_admin
    if access.can(offering_id, Action.READ_SUBMISSIONS):
        return True
    return submission.user_id == access.user_id and access.role_in(offering_id) is not None


def list_for(
    session: Session,
    *,
    access: Access,
    problem_set: str | None = None,
    problem_id: str | None = None,
    user_id: int | None = None,
    offering_id: int | None = None,
    limit: int = 50,
    offset: int = 0,
) -> list[Submission]:
    """Newest first: the caller's own in their offerings, and everyone's in the offerings they teach."""
    everyone = access.offerings(Action.READ_SUBMISSIONS)
    own = access.offerings(Action.VIEW)
    if offering_id is not None:
        everyone, own = everyone & {offering_id}, own & {offering_id}
    query = (
        select(Submission)
        .join(Assignment, Submission.assignment_id == Assignment.id)
        .where(
            or_(
                Assignment.offering_id.in_(everyone),
                and_(Submission.user_id == access.user_id, Assignment.offering_id.in_(own)),
            )
        )
        .options(selectinload(Submission.grade), selectinload(Submission.checks), selectinload(Submission.assignment))
        .order_by(Submission.id.desc())
        .limit(limit)
        .offset(offset)
    )
    if user_id is not None:
        query = query.where(Submission.user_id == user_id)
    if problem_set is not None:
        # Through the assignment's set, with the ON spelled out: a bare join(ProblemSetVersion) took the path through
        # Assignment.pinned_version_id, so only submissions of pinned assignments matched.
        query = query.join(ProblemSet, Assignment.problem_set_id == ProblemSet.id).where(ProblemSet.slug == problem_set)
    if problem_id is not None:
        query = query.where(Submission.problem_id == problem_id)
    return list(session.scalars(query))


def is_finished(submission: Submission) -> bool:
    return submission.status in (Status.GRADED, Status.ERROR)
