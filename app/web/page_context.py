"""What each page shows, gathered from the services (the page routes only parse, call these, and render)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.courses import service as courses
from app.courses.access import Access, access_for
from app.courses.models import Assignment
from app.courses.policy import policy_for
from app.gradebook import service as gradebook
from app.problemsets import service as sets
from app.submissions import service as submissions
from app.submissions.models import Status, Submission
from app.submissions.presenter import submission_public
from app.submissions.release import seal_for, seal_of
from app.submissions.schemas import SubmissionPublic
from app.users.models import User
from graders.model import ProblemSetSpec


@dataclass
class SetCard:
    slug: str
    offering: int
    title: str
    description: str
    version: int
    problems: int
    due_at: str | None
    attempted: int
    best_total: float
    max_total: float


def set_cards(session: Session, *, user: User) -> list[SetCard]:
    """The sets assigned in the user's offerings, each with how far the user got (scores as released)."""
    access = access_for(session, user)
    cards = []
    for found in courses.visible_assignments(session, access):
        problem_set, assignment = found.problem_set, found.assignment
        version = courses.version_of(session, assignment)
        spec = sets.spec_of(version)
        mine = _released_progress(session, access, assignment, spec, user)
        points = version.validation_report.get("points", {})
        due = policy_for(assignment, spec, "", courses.member_of(session, assignment.offering_id, user.id)).due_at
        cards.append(
            SetCard(
                slug=problem_set.slug,
                offering=assignment.offering_id,
                title=problem_set.title,
                description=version.spec.get("description", ""),
                version=version.number,
                problems=len(version.spec.get("problems", [])),
                due_at=due.isoformat() if due else None,
                attempted=len(mine),
                best_total=sum(p.best_score or 0.0 for p in mine.values()),
                max_total=sum(float(v) for v in points.values()),
            )
        )
    return cards


def _released_progress(
    session: Session, access: Access, assignment: Assignment, spec: ProblemSetSpec, user: User
) -> dict[str, gradebook.Progress]:
    """The user's progress, with the score left out of problems whose scores the release policy still seals."""
    out = {}
    for problem_id, row in gradebook.progress(session, user_id=user.id, assignment=assignment).items():
        seal = seal_of(session, access, assignment, spec, user_id=user.id, problem_id=problem_id)
        out[problem_id] = row if seal.scores else replace(row, best_score=None)
    return out


def set_page(
    session: Session, settings: Settings, *, user: User, slug: str, offering_id: int | None = None
) -> dict[str, Any]:
    """The student view of a set (prompts, parts, points) plus the user's progress on each problem."""
    access = access_for(session, user)
    found = courses.resolve(session, access, slug, offering_id=offering_id)
    version = courses.version_of(session, found.assignment)
    loaded = sets.loaded_version(settings, version)
    member = courses.member_of(session, found.assignment.offering_id, user.id)
    view = sets.student_view(version, loaded, due_at=policy_for(found.assignment, loaded.spec, "", member).due_at)
    view["language"] = loaded.spec.language
    return {
        "set": view,
        "offering": found.assignment.offering_id,
        "progress": _released_progress(session, access, found.assignment, loaded.spec, user),
    }


@dataclass
class SubmissionPage:
    sub: Submission
    view: SubmissionPublic
    problem_title: str
    language: str
    queue_ahead: int | None
    owner: User | None = None  # shown to instructors only
    rubric: list[dict[str, Any]] = field(default_factory=list)
    rubric_points: float = 0.0


def submission_page(session: Session, settings: Settings, *, user: User, submission_id: int) -> SubmissionPage:
    """A submission as its viewer may see it; students get 404 for anyone else's (from submissions.get)."""
    access = access_for(session, user)
    sub = submissions.get(session, submission_id=submission_id, access=access)
    loaded = sets.loaded_version(settings, sub.problem_set_version)
    problem = loaded.spec.problem(sub.problem_id)
    seal = seal_for(session, sub, access, loaded.spec)
    page = SubmissionPage(
        sub=sub,
        view=submission_public(sub, loaded, seal=seal),
        problem_title=problem.title if problem else sub.problem_id,
        language=loaded.spec.language,
        queue_ahead=_queue_ahead(session, sub) if sub.status == Status.QUEUED else None,
    )
    if seal.staff:
        page.owner = session.get(User, sub.user_id)
        page.rubric = [item.model_dump() for item in problem.rubric] if problem else []
        page.rubric_points = gradebook.rubric_points(sub)
    return page


def _queue_ahead(session: Session, sub: Submission) -> int:
    """How many queued submissions will be graded before this one (workers take the oldest first)."""
    query = (
        select(func.count()).select_from(Submission).where(Submission.status == Status.QUEUED, Submission.id < sub.id)
    )
    return session.scalar(query) or 0
