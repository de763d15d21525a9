"""Bulk regrade of one problem: preview which submissions a selection holds (their scores now and, for answer
problems, the scores a regrade would give), requeue them against the current version of the set as one batch, and
follow the batch's progress (how many are graded again, how many scores changed)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from app.config import Settings
from app.courses import service as courses
from app.courses.access import Access
from app.courses.models import Assignment
from app.courses.permissions import Action
from app.errors import N_, Invalid, NotFound
from app.gradebook.models import RegradeBatch
from app.gradebook.service import requeue
from app.problemsets.models import ProblemSetVersion
from app.problemsets.service import loaded_version
from app.problemsets.variants import variant_of
from app.submissions.attempts import EPS
from app.submissions.models import Status, Submission, final_score_of, round_score
from app.submissions.penalties import Penalties, grading_penalties
from app.users.models import User
from graders.code.grader import CodeGraderLike
from graders.grade import grade_submission
from graders.kinds import kind_of
from graders.problemset.loader import LoadedSet
from graders.problemset.variants import Variant

NO_GRADE = "no grade"
# The most submissions a preview grades in the page's request (a fill-in answer takes well under a millisecond, a
# symbolic one may wait on the SymPy pool): past that, the change is known after applying, as for code.
PREDICT_LIMIT = 2000


@dataclass
class Selection:
    assignment: Assignment
    version: ProblemSetVersion  # the set's current version for this assignment: what the regrade grades against
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


def final_of(sub: Submission) -> float | None:
    return round_score(sub.grade.final_score) if sub.grade is not None else None


def _score_label(sub: Submission) -> str:
    score = final_of(sub)
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
    version = courses.version_of(session, found.assignment)
    problems = {p["id"] for p in version.spec.get("problems", [])}
    if problem_id not in problems:
        raise Invalid(
            N_("no problem %(problem)s in %(set)s; expected one of %(problems)s"), field="problem",
            params={"problem": repr(problem_id), "set": repr(slug), "problems": sorted(problems)},
        )  # fmt: skip

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
        version=version,
        problem_id=problem_id,
        since=since,
        below_full=below_full,
        submissions=[s for s in settled if _below_full(s)] if below_full else settled,
        in_flight=len(rows) - len(settled),
    )


@dataclass
class Prediction:
    """What applying would do to the selection, graded here without writing anything.

    ``known`` is False for a problem whose grading runs in the sandbox (code): the page's request never runs student
    code, so its change is known after applying, or from a trial run (app.gradebook.trial_regrade), which builds
    a known Prediction of its own. ``after`` maps each predicted submission to its score."""

    known: bool
    before: dict[int, float | None]
    after: dict[int, float | None]  # None: its answers could not be graded against the current version
    failed: int = 0
    too_many: bool = False  # an answer problem, but more submissions than PREDICT_LIMIT: not graded here

    def changed(self) -> dict[int, float]:
        """Submission -> predicted score, for those whose score would change (a first grade counts as a change,
        as the progress page counts it)."""
        out = {}
        for sid, after in self.after.items():
            before = self.before[sid]
            if after is not None and (before is None or abs(after - before) > EPS):
                out[sid] = after
        return out

    @property
    def up(self) -> int:  # as BatchProgress counts: a change is up when the score rises, down otherwise
        return sum(1 for sid, after in self.changed().items() if after > (self.before[sid] or 0.0))

    @property
    def down(self) -> int:
        return len(self.changed()) - self.up

    @property
    def same(self) -> int:
        return len(self.after) - self.failed - len(self.changed())

    @property
    def total_change(self) -> float:
        return round_score(sum(after - (self.before[sid] or 0.0) for sid, after in self.changed().items()))

    def transitions(self) -> list[tuple[str, str, int]]:
        """(score now, score after, how many), the changed ones only, biggest count first."""
        counts: Counter[tuple[str, str]] = Counter()
        for sid, after in self.changed().items():
            before = self.before[sid]
            counts[(NO_GRADE if before is None else f"{before:g}", f"{after:g}")] += 1
        return [(b, a, n) for (b, a), n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))]


def _no_code_grader() -> CodeGraderLike:
    raise RuntimeError("the regrade preview grades answer problems only")


def predict(session: Session, settings: Settings, selection: Selection, limit: int = PREDICT_LIMIT) -> Prediction:
    """Grade each selected submission's stored answers against the current version, in this process, with the
    worker's entry point (graders.grade) and its penalties; hand-given points stay, as a regrade keeps them.
    Nothing is written. Code problems, and selections of more than ``limit``, are not graded here (``known``
    False)."""
    before = {s.id: final_of(s) for s in selection.submissions}
    loaded = loaded_version(settings, selection.version)
    problem = loaded.spec.problem(selection.problem_id)
    if problem is None or not kind_of(problem).grades_in_process:
        return Prediction(known=False, before=before, after={})
    if len(selection.submissions) > limit:
        return Prediction(known=False, before=before, after={}, too_many=True)
    after: dict[int, float | None] = {}
    failed = 0
    for sub in selection.submissions:
        penalties = grading_penalties(session, sub, loaded.spec)
        try:
            # The submission's own variant under the current version's generator, as the worker will grade it.
            variant = None
            if sub.variant_seed is not None and problem.generator is not None:
                variant = variant_of(session, settings, selection.version, loaded, problem, sub.variant_seed)
            after[sub.id] = regraded_score(loaded, selection.problem_id, sub.payload, penalties, manual_of(sub),
                                           _no_code_grader, variant)  # fmt: skip
        except Exception:  # answers the current version cannot read: the worker would record a failure
            after[sub.id], failed = None, failed + 1
    return Prediction(known=True, before=before, after=after, failed=failed)


def manual_of(sub: Submission) -> float | None:
    return sub.grade.manual_score if sub.grade is not None else None


def regraded_score(
    loaded: LoadedSet,
    problem_id: str,
    payload: dict[str, Any],
    penalties: Penalties,
    manual: float | None,
    code_grader: Callable[[], CodeGraderLike],
    variant: Variant | None = None,
) -> float:
    """The final score a regrade would give a stored payload (of its ``variant``): the worker's entry point
    (graders.grade), the penalties it would recompute, the hand-given points it keeps. Raises what grading raises."""
    result = grade_submission(loaded, problem_id, dict(payload), code_grader, variant)
    return round_score(final_score_of(result.score, manual, penalties.late, penalties.decay))


def start(session: Session, *, selection: Selection, user: User) -> RegradeBatch:
    """Requeue every selected submission against the current version of the set (the one the preview graded
    against) and record the batch with each score before; committed here, so the caller can wake the workers
    (one job per submission)."""
    if not selection.submissions:
        raise Invalid(N_("the selection holds no submission to regrade"), field="problem")

    for sub in selection.submissions:
        sub.problem_set_version = selection.version
        requeue(sub)
    batch = RegradeBatch(
        assignment_id=selection.assignment.id,
        problem_id=selection.problem_id,
        created_by_id=user.id,
        filters={"since": selection.since.isoformat() if selection.since else None, "below_full": selection.below_full},
        before={str(s.id): final_of(s) for s in selection.submissions},
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
        before, after = batch.before[str(sub.id)], final_of(sub)
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
