"""The grading queue: per problem, the submissions awaiting hand grading in order, graded with rubric checkboxes.

Each rubric item is a checkbox worth its points with an optional comment; the score saved is the sum of the items
checked, and the feedback the student reads lists which items were met and the comments (the Grade row keeps a
score and a text, so the items travel in that text). "Save and next" goes on to the next submission in the queue;
anonymous mode hides names and emails (student n of the queue instead).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.courses import service as courses
from app.courses.access import Access, access_for
from app.deps import RowId, RowIdQuery
from app.errors import Invalid, NotFound
from app.gradebook import service as gradebook
from app.problemsets import service as sets
from app.submissions import service as submissions
from app.submissions.models import Submission
from app.users.models import User
from app.web.deps import CheckedForm, WebInstructor, WebSession, WebSettings
from app.web.page_route import WebRoute
from app.web.rendering import render

router = APIRouter(route_class=WebRoute)


def _queue(session: WebSession, access: Access, slug: str, problem: str, offering: int | None) -> list[int]:
    """Scoped like the gradebook: only offerings where the viewer may grade (404 elsewhere)."""
    awaiting = gradebook.awaiting_manual(session, access=access, slug=slug, offering_id=offering)
    return [a.submission_id for a in awaiting if a.problem == problem]


def _rubric(settings: WebSettings, sub: Submission) -> tuple[list[dict[str, Any]], str]:
    loaded = sets.loaded_version(settings, sub.problem_set_version)
    problem = loaded.spec.problem(sub.problem_id)
    if problem is None:
        raise NotFound(f"no problem {sub.problem_id!r} in this set", field="problem")
    return [item.model_dump() for item in problem.rubric], loaded.spec.language


@router.get("/instructor/sets/{slug}/queue/{problem}")
def queue_page(
    request: Request,
    slug: str,
    problem: str,
    user: WebInstructor,
    session: WebSession,
    settings: WebSettings,
    anonymous: bool = False,
    offering: RowIdQuery = None,
) -> Response:
    """The first submission of this problem awaiting hand grading, its answer in full and the rubric."""
    queue = _queue(session, access_for(session, user), slug, problem, offering)
    if not queue:
        return render(request, "instructor/queue.html", slug=slug, problem=problem, sub=None, anonymous=anonymous,
                      offering=offering)  # fmt: skip
    sub = session.get(Submission, queue[0])
    assert sub is not None  # listed a moment ago
    rubric, language = _rubric(settings, sub)
    owner = session.get(User, sub.user_id)
    member = courses.member_of(session, sub.assignment.offering_id, sub.user_id) if sub.assignment else None
    return render(request, "instructor/queue.html", slug=slug, problem=problem, sub=sub, rubric=rubric,
                  owner=owner, owner_name=(member.name if member else "") or (owner.display_name if owner else ""),
                  left=len(queue), language=language,
                  anonymous=anonymous, offering=offering)  # fmt: skip


@router.post("/instructor/sets/{slug}/queue/{problem}/{submission_id}")
def save_and_next(
    request: Request,
    slug: str,
    problem: str,
    submission_id: RowId,
    form: CheckedForm,
    user: WebInstructor,
    session: WebSession,
    settings: WebSettings,
) -> Response:
    """Score = the points of the items checked; the feedback lists met and missed items with the comments."""
    access = access_for(session, user)
    # The same 404 as everywhere for a submission outside the offerings the viewer grades, before anything of it
    # is read.
    sub = submissions.get(session, submission_id=submission_id, access=access)
    if sub.problem_id != problem:
        raise NotFound(f"no submission {submission_id} of {problem!r}", field="submission_id")
    rubric, _ = _rubric(settings, sub)
    met = {v for v in form.getlist("met") if isinstance(v, str)}
    unknown = met - {str(item["id"]) for item in rubric}
    if unknown:
        raise Invalid(f"unknown rubric items {sorted(unknown)}", field="met")
    lines, score = [], 0.0
    for item in rubric:
        comment = str(form.get(f"comment.{item['id']}") or "").strip()
        mark = "✓ met" if str(item["id"]) in met else "✗ not met"
        score += float(item["points"]) if str(item["id"]) in met else 0.0
        points = f"{item['points']:g} pt" + ("" if item["points"] == 1 else "s")
        lines.append(f"{mark} ({points}): {item['description']}" + (f"\n   {comment}" if comment else ""))
    overall = str(form.get("feedback") or "").strip()
    feedback = "\n".join(lines) + (f"\n\n{overall}" if overall else "")
    gradebook.manual_grade(
        session, access=access, submission_id=submission_id, grader=user, manual_score=score, feedback=feedback
    )
    # Back to the same queue: the same offering (a set may be assigned in several) and the same mode.
    query = {"anonymous": "1"} if form.get("anonymous") == "1" else {}
    offering = str(form.get("offering") or "")
    if offering.isdigit():
        query["offering"] = offering
    suffix = f"?{urlencode(query)}" if query else ""
    return RedirectResponse(f"/instructor/sets/{slug}/queue/{problem}{suffix}", status_code=303)
