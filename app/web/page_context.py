"""What each page shows, gathered from the services (the page routes only parse, call these, and render)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.gradebook import service as gradebook
from app.problemsets import service as sets
from app.submissions import service as submissions
from app.submissions.models import Status, Submission
from app.submissions.presenter import submission_public
from app.submissions.schemas import SubmissionPublic
from app.users.models import User


@dataclass
class SetCard:
    slug: str
    title: str
    description: str
    version: int
    problems: int
    due_at: str | None
    attempted: int
    best_total: float
    max_total: float


def set_cards(session: Session, *, user: User) -> list[SetCard]:
    """The sets a user can see, each with how far the user got."""
    cards = []
    for problem_set, version in sets.list_sets(session, include_hidden=user.is_staff):
        mine = gradebook.progress(session, user_id=user.id, problem_set_id=problem_set.id)
        points = version.validation_report.get("points", {})
        cards.append(
            SetCard(
                slug=problem_set.slug,
                title=problem_set.title,
                description=version.spec.get("description", ""),
                version=version.number,
                problems=len(version.spec.get("problems", [])),
                due_at=version.spec.get("due_at"),
                attempted=len(mine),
                best_total=sum(p.best_score or 0.0 for p in mine.values()),
                max_total=sum(float(v) for v in points.values()),
            )
        )
    return cards


def set_page(session: Session, settings: Settings, *, user: User, slug: str) -> dict[str, Any]:
    """The student view of a set (prompts, parts, points) plus the user's progress on each problem."""
    version = sets.get_latest(session, slug, include_hidden=user.is_staff)
    loaded = sets.loaded_version(settings, version)
    view = sets.student_view(version, loaded)
    view["language"] = loaded.spec.language
    return {
        "set": view,
        "progress": gradebook.progress(session, user_id=user.id, problem_set_id=version.problem_set_id),
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
    sub = submissions.get(session, submission_id=submission_id, user=user)
    loaded = sets.loaded_version(settings, sub.problem_set_version)
    problem = loaded.spec.problem(sub.problem_id)
    page = SubmissionPage(
        sub=sub,
        view=submission_public(sub, loaded, viewer_is_staff=user.is_staff),
        problem_title=problem.title if problem else sub.problem_id,
        language=loaded.spec.language,
        queue_ahead=_queue_ahead(session, sub) if sub.status == Status.QUEUED else None,
    )
    if user.is_staff:
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
