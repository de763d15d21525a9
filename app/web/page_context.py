"""What each page shows, gathered from the services (the page routes only parse, call these, and render)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.gradebook import service as gradebook
from app.gradebook.service import Progress
from app.problemsets import service as sets
from app.submissions import service as submissions
from app.submissions.models import Status, Submission
from app.submissions.presenter import submission_public
from app.submissions.schemas import SubmissionPublic
from app.users.models import User
from app.web.blanks import Mark, blank_html
from app.web.markdown import render_prompt
from graders.problemset.loader import LoadedSet
from graders.results import Verdict


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
    pending: int = 0  # problems awaiting hand grading, left out of best_total


def set_cards(session: Session, *, user: User) -> list[SetCard]:
    """The sets a user can see, each with how far the user got."""
    cards = []
    for problem_set, version in sets.list_sets(session, include_hidden=user.is_staff):
        mine = gradebook.progress(session, user_id=user.id, problem_set_id=problem_set.id)
        pending = pending_manual(session, mine)
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
                best_total=sum(p.best_score or 0.0 for pid, p in mine.items() if pid not in pending),
                pending=len(pending),
                max_total=sum(float(v) for v in points.values()),
            )
        )
    return cards


@dataclass
class Latest:
    """What the set page keeps of a problem's latest attempt: the answers or code sent, and each blank's mark."""

    answers: dict[str, str] = field(default_factory=dict)
    code: str = ""
    marks: dict[str, Mark] = field(default_factory=dict)


def set_page(
    session: Session,
    settings: Settings,
    *,
    user: User,
    slug: str,
    typed: dict[str, list[str]] | None = None,
    typed_problem: str | None = None,
) -> dict[str, Any]:
    """The student view of a set with each blank in its prompt, the last answers filled in and marked.

    ``typed`` (the answers of a refused form for ``typed_problem``) replaces that problem's last answers.
    """
    version = sets.get_latest(session, slug, include_hidden=user.is_staff)
    loaded = sets.loaded_version(settings, version)
    view = sets.student_view(version, loaded)
    view["language"] = loaded.spec.language
    progress = gradebook.progress(session, user_id=user.id, problem_set_id=version.problem_set_id)
    latest = {pid: _latest(session, loaded, p.latest_submission_id, user) for pid, p in progress.items()}
    for problem in view["problems"]:
        mine = latest.get(problem["id"]) or Latest()
        if typed is not None and typed_problem == problem["id"]:
            mine = Latest(answers={k: v[0] if len(v) == 1 else ",".join(v) for k, v in typed.items()})
        problem["given"] = mine.answers
        problem["last_code"] = mine.code
        problem["marks"] = mine.marks
        _place_blanks(problem, slug=view["id"], mine=mine)
    return {"set": view, "progress": progress, "pending": pending_manual(session, progress)}


def pending_manual(session: Session, progress: dict[str, Progress]) -> set[str]:
    """Problems whose best attempt still waits for hand grading: shown as pending, never as its automatic 0."""
    out = set()
    for pid, prog in progress.items():
        sub = session.get(Submission, prog.best_submission_id) if prog.best_submission_id else None
        if sub is not None and is_pending_manual(sub):
            out.add(pid)
    return out


def is_pending_manual(sub: Submission) -> bool:
    return sub.status == Status.GRADED and sub.grade is not None and sub.grade.verdict == Verdict.PENDING_MANUAL


def _latest(session: Session, loaded: LoadedSet, submission_id: int, user: User) -> Latest:
    sub = session.get(Submission, submission_id)
    if sub is None or sub.user_id != user.id:
        return Latest()
    payload = sub.payload or {}
    answers = payload.get("answers") if isinstance(payload.get("answers"), dict) else {}
    code = payload.get("code") if isinstance(payload.get("code"), str) else ""
    marks: dict[str, Mark] = {}
    if sub.status == Status.GRADED:
        # The same visibility rules as the submission page: a sealed check has passed=None and gives no mark.
        for check in submission_public(sub, loaded, viewer_is_staff=user.is_staff).checks:
            if check.category == "answer" and check.passed is not None:
                marks[check.name] = Mark(passed=check.passed, feedback=check.feedback)
    return Latest(answers={str(k): str(v) for k, v in (answers or {}).items()}, code=code or "", marks=marks)


def _place_blanks(problem: dict[str, Any], *, slug: str, mine: Latest) -> None:
    """Render the prompt with its blanks in place; parts not placed there (options, no marker) go below it."""
    parts = problem.get("parts", []) if problem["takes"] == "answers" else []
    inline = {
        part["id"]: blank_html(
            slug=slug,
            problem_id=problem["id"],
            part=part,
            given=mine.answers.get(part["id"], ""),
            mark=mine.marks.get(part["id"]),
            multi_part=len(parts) > 1,
        )
        for part in parts
        if part["widget"] != "options"
    }
    problem["prompt_html"], placed = render_prompt(problem["prompt"], inline)
    problem["below"] = [part for part in parts if part["id"] not in placed]
    problem["below_html"] = {pid: html for pid, html in inline.items() if pid not in placed}


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
