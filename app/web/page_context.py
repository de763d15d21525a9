"""What each page shows, gathered from the services (the page routes only parse, call these, and render)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from gettext import NullTranslations
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.courses import clock
from app.courses import service as courses
from app.courses.access import Access, access_for
from app.courses.models import Assignment, Membership, Offering
from app.courses.permissions import Action
from app.courses.policy import Policy, override_for, policy_for
from app.db import utcnow
from app.gradebook import service as gradebook
from app.gradebook.service import Progress
from app.problemsets import service as sets
from app.problemsets.variants import student_variants
from app.submissions import service as submissions
from app.submissions.allocation import attempts_used
from app.submissions.attempts import variant_rounds
from app.submissions.models import Status, Submission
from app.submissions.presenter import submission_public
from app.submissions.release import seal_for, seal_of
from app.submissions.schemas import SubmissionPublic
from app.users.models import User
from app.web.blanks import Mark, blank_html
from app.web.markdown import render_prompt
from graders.model import ProblemSetSpec
from graders.problemset.loader import LoadedSet
from graders.results import Verdict


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
    pending: int = 0  # problems awaiting hand grading, left out of best_total
    zone: str = "UTC"  # the offering's time zone: dates are shown in it unless the browser told its own
    course_title: str = ""  # the card names its course and offering: a set may be assigned in several
    offering_title: str = ""


def offering_zone(session: Session, offering_id: int | None) -> str:
    offering = session.get(Offering, offering_id) if offering_id is not None else None
    return offering.time_zone if offering is not None else "UTC"


def set_cards(session: Session, *, user: User) -> list[SetCard]:
    """The sets assigned in the user's offerings, each with how far the user got (scores as released)."""
    access = access_for(session, user)
    cards = []
    for found in courses.visible_assignments(session, access):
        problem_set, assignment = found.problem_set, found.assignment
        version = courses.version_of(session, assignment)
        spec = sets.spec_of(version)
        mine = _released_progress(session, access, assignment, spec, user)
        pending = pending_manual(session, mine)
        points = version.validation_report.get("points", {})
        member = courses.member_of(session, assignment.offering_id, user.id)
        started = clock.started_at(session, assignment, user.id)
        due = policy_for(assignment, spec, "", member, started_at=started).deadline
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
                best_total=sum(p.best_score or 0.0 for pid, p in mine.items() if pid not in pending),
                pending=len(pending),
                max_total=sum(float(v) for v in points.values()),
                zone=offering_zone(session, assignment.offering_id),
                course_title=assignment.offering.course.title,
                offering_title=assignment.offering.title,
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


@dataclass
class Latest:
    """What the set page keeps of a problem's latest attempt: the answers or code sent, and each blank's mark."""

    answers: dict[str, str] = field(default_factory=dict)
    code: str = ""
    marks: dict[str, Mark] = field(default_factory=dict)


@dataclass(frozen=True)
class TimedStart:
    """A timed set whose clock has not started, reached from another site: the page asks first (start_confirm)."""

    title: str
    minutes: str  # the set's limit x the student's multiplier: "45", "67.5"
    url: str


def start_confirm(session: Session, *, user: User, slug: str, offering_id: int | None) -> TimedStart | None:
    """For a student who has not started a timed set: what the "open it and start" page shows; None otherwise.

    Opening a timed set starts its clock, and a GET comes along with the session cookie from any site's link (or a
    page that navigates there by itself): someone else must not be able to start a student's time."""
    access = access_for(session, user)
    found = courses.resolve(session, access, slug, offering_id=offering_id)
    assignment = found.assignment
    if not assignment.time_limit_min or access.can(assignment.offering_id, Action.VIEW_UNRELEASED):
        return None
    if clock.started_at(session, assignment, user.id) is not None:
        return None
    override = override_for(assignment, courses.member_of(session, assignment.offering_id, user.id))
    multiplier = override.time_multiplier if override is not None else 1.0
    return TimedStart(
        title=found.problem_set.title,
        minutes=f"{assignment.time_limit_min * multiplier:g}",
        url=f"/sets/{found.problem_set.slug}?offering={assignment.offering_id}",
    )


@dataclass(frozen=True)
class SetChoice:
    """One offering of the chooser shown when a set is assigned in several of the viewer's offerings."""

    offering: int
    course_title: str
    offering_title: str
    due_at: str | None
    zone: str
    timed_minutes: str | None = None  # a timed set not started yet: its clock starts when this link is followed


@dataclass(frozen=True)
class SetChooser:
    title: str
    choices: list[SetChoice]


def set_chooser(session: Session, *, user: User, slug: str, offering_ids: list[int]) -> SetChooser:
    """The viewer's offerings that assign set ``slug`` (courses.Ambiguous's ids), each with its due date for them."""
    access = access_for(session, user)
    title = slug
    out = []
    for offering_id in offering_ids:
        found = courses.resolve(session, access, slug, offering_id=offering_id)
        assignment, title = found.assignment, found.problem_set.title
        spec = sets.spec_of(courses.version_of(session, assignment))
        member = courses.member_of(session, assignment.offering_id, user.id)
        started = clock.started_at(session, assignment, user.id)  # read only: choosing starts no clock
        due = policy_for(assignment, spec, "", member, started_at=started).deadline
        offering = session.get(Offering, offering_id)
        assert offering is not None  # resolve found an assignment in it
        unstarted = start_confirm(session, user=user, slug=slug, offering_id=offering_id)
        out.append(
            SetChoice(
                offering=offering_id,
                course_title=offering.course.title,
                offering_title=offering.title,
                due_at=due.isoformat() if due else None,
                zone=offering.time_zone,
                timed_minutes=unstarted.minutes if unstarted is not None else None,
            )
        )
    return SetChooser(title=title, choices=out)


def set_page(
    session: Session,
    settings: Settings,
    *,
    user: User,
    slug: str,
    offering_id: int | None = None,
    typed: dict[str, list[str]] | None = None,
    typed_problem: str | None = None,
    tr: NullTranslations | None = None,
) -> dict[str, Any]:
    """The student view of a set with each blank in its prompt, the last answers filled in and marked.

    ``typed`` (the answers of a refused form for ``typed_problem``) replaces that problem's last answers.
    """
    access = access_for(session, user)
    found = courses.resolve(session, access, slug, offering_id=offering_id)
    version = courses.version_of(session, found.assignment)
    loaded = sets.loaded_version(settings, version)
    member = courses.member_of(session, found.assignment.offering_id, user.id)
    started = None
    if not access.can(found.assignment.offering_id, Action.VIEW_UNRELEASED):
        # A student opening a timed set starts their clock (committed at once: it stands whatever happens next).
        started = clock.start(session, found.assignment, user.id)
        session.commit()
    policy = policy_for(found.assignment, loaded.spec, "", member, started_at=started)
    variants = student_variants(session, settings, version=version, loaded=loaded, assignment_id=found.assignment.id,
                                user_id=user.id, rounds=variant_rounds(session, found.assignment, user.id),
                                shared=found.assignment.shared_variant)  # fmt: skip
    session.commit()  # a variant generated now is kept
    view = sets.student_view(version, loaded, due_at=policy.deadline, variants=variants)
    view["time_limit_min"] = found.assignment.time_limit_min
    view["time_ends_at"] = policy.time_ends_at
    view["language"] = loaded.spec.language
    progress = _released_progress(session, access, found.assignment, loaded.spec, user)
    latest = {pid: _latest(session, loaded, access, p.latest_submission_id, user) for pid, p in progress.items()}
    staff = access.can(found.assignment.offering_id, Action.VIEW_UNRELEASED)
    for problem in view["problems"]:
        problem["attempts"] = attempts_left(session, found.assignment, loaded.spec, member, user.id, problem["id"],
                                            started_at=started, staff=staff)  # fmt: skip
        mine = latest.get(problem["id"]) or Latest()
        if typed is not None and typed_problem == problem["id"]:
            mine = Latest(answers={k: v[0] if len(v) == 1 else ",".join(v) for k, v in typed.items()})
        problem["given"] = mine.answers
        problem["last_code"] = mine.code
        problem["marks"] = mine.marks
        _place_blanks(problem, slug=view["id"], mine=mine, tr=tr, offering=found.assignment.offering_id)
    return {
        "set": view,
        "offering": found.assignment.offering_id,
        "zone": offering_zone(session, found.assignment.offering_id),
        "progress": progress,
        "pending": pending_manual(session, progress),
        "release": release_words(policy),
    }


@dataclass(frozen=True)
class Attempts:
    """A problem's attempts for the set page: how many are used of how many, and whether Submit is open now."""

    used: int
    allowed: int | None  # None: no limit (or staff, whom the limits do not bind)
    ready_at: datetime | None = None  # inside a cooldown: when the next attempt is possible

    @property
    def none_left(self) -> bool:
        return self.allowed is not None and self.used >= self.allowed


def attempts_left(
    session: Session,
    assignment: Assignment,
    spec: ProblemSetSpec,
    member: Membership | None,
    user_id: int,
    problem_id: str,
    *,
    started_at: datetime | None,
    staff: bool,
) -> Attempts:
    """The same count and limits that app.submissions.allocation.check_limits refuses an attempt by."""
    used, last_at = attempts_used(session, user_id=user_id, assignment_id=assignment.id, problem_id=problem_id)
    if staff:
        return Attempts(used, None)
    policy = policy_for(assignment, spec, problem_id, member, started_at=started_at)
    ready = last_at + timedelta(seconds=policy.cooldown_s) if policy.cooldown_s and last_at is not None else None
    return Attempts(used, policy.max_attempts, ready if ready is not None and ready > utcnow() else None)


@dataclass(frozen=True)
class ReleaseWords:
    """What the pages word a release policy with: when scores and the answer key open, the due date, the limit."""

    scores: str
    answer_key: str
    due_at: datetime | None
    max_attempts: int | None


def release_words(policy: Policy) -> ReleaseWords:
    return ReleaseWords(
        scores=str(policy.release["scores"]),
        answer_key=str(policy.release["answer_key"]),
        due_at=policy.due_at,
        max_attempts=policy.max_attempts,
    )


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


def _latest(session: Session, loaded: LoadedSet, access: Access, submission_id: int, user: User) -> Latest:
    sub = session.get(Submission, submission_id)
    if sub is None or sub.user_id != user.id:
        return Latest()
    payload = sub.payload or {}
    answers = payload.get("answers") if isinstance(payload.get("answers"), dict) else {}
    code = payload.get("code") if isinstance(payload.get("code"), str) else ""
    marks: dict[str, Mark] = {}
    if sub.status == Status.GRADED:
        # The same visibility and release rules as the submission page: a sealed check gives no mark.
        view = submission_public(sub, loaded, seal=seal_for(session, sub, access, loaded.spec))
        for check in view.checks:
            if check.category == "answer" and check.passed is not None:
                marks[check.name] = Mark(passed=check.passed, feedback=check.feedback)
    return Latest(answers={str(k): str(v) for k, v in (answers or {}).items()}, code=code or "", marks=marks)


def _place_blanks(
    problem: dict[str, Any], *, slug: str, mine: Latest, tr: NullTranslations | None, offering: int | None = None
) -> None:
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
            tr=tr,
            offering=offering,
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
    zone: str = "UTC"  # the offering's time zone
    release: ReleaseWords | None = None  # when its answer key opens (None: no assignment)


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
        zone=_submission_zone(session, sub),
        release=_release_of(session, sub, loaded.spec),
    )
    if seal.staff:
        page.owner = session.get(User, sub.user_id)
        page.rubric = [item.model_dump() for item in problem.rubric] if problem else []
        page.rubric_points = gradebook.rubric_points(sub)
    return page


def _release_of(session: Session, sub: Submission, spec: ProblemSetSpec) -> ReleaseWords | None:
    """The release policy of the submission's owner for its problem, as the set page words it."""
    assignment = session.get(Assignment, sub.assignment_id) if sub.assignment_id is not None else None
    if assignment is None:
        return None
    member = courses.member_of(session, assignment.offering_id, sub.user_id)
    started = clock.started_at(session, assignment, sub.user_id)
    return release_words(policy_for(assignment, spec, sub.problem_id, member, started_at=started))


def _submission_zone(session: Session, sub: Submission) -> str:
    assignment = session.get(Assignment, sub.assignment_id) if sub.assignment_id is not None else None
    return offering_zone(session, assignment.offering_id if assignment is not None else None)


def _queue_ahead(session: Session, sub: Submission) -> int:
    """How many queued submissions will be graded before this one (workers take the oldest first)."""
    query = (
        select(func.count()).select_from(Submission).where(Submission.status == Status.QUEUED, Submission.id < sub.id)
    )
    return session.scalar(query) or 0
