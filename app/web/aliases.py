"""Accept a common wrong answer in one click: from the gradebook's statistics, a new version of the set with the
answer among the blank's aliases, validated by the upload gate (the upload's progress page follows it), then a
link to the bulk regrade of that problem, which previews the scores the alias changes."""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.courses import service as courses
from app.courses.access import access_for
from app.courses.permissions import Action
from app.deps import RowIdQuery
from app.errors import Conflict, Invalid
from app.problemsets import service as sets
from app.problemsets.aliases import Alias, with_alias
from app.web.deps import CheckedForm, WebInstructor, WebSession, WebSettings
from app.web.i18n import for_request
from app.web.instructor import gradebook_response, upload_jobs, validate_and_store
from app.web.page_route import WebRoute
from app.web.upload_jobs import UploadJob

router = APIRouter(route_class=WebRoute)


@router.post("/instructor/sets/{slug}/aliases")
def add_alias(
    request: Request,
    slug: str,
    form: CheckedForm,
    user: WebInstructor,
    session: WebSession,
    settings: WebSettings,
    offering: RowIdQuery = None,
) -> Response:
    """Add the form's answer to one text blank's aliases as a new version of the set, validated like an upload.

    Refused at once, on the gradebook page, when the answer is already accepted, is one of the set's known-wrong
    examples, the blank is not a text blank, or the assignment is pinned to a version. Staff who may upload
    sets into the offering only (404 for anyone else)."""
    alias = Alias(
        problem_id=str(form.get("problem") or "")[:64],
        part_id=str(form.get("part") or "")[:16],
        answer=str(form.get("answer") or "")[:1000],
    )
    access = access_for(session, user)
    found = courses.resolve(session, access, slug, offering_id=offering, action=Action.UPLOAD)
    offering_id = found.assignment.offering_id
    try:
        latest = sets.get_latest(session, slug, include_hidden=True)
        if found.assignment.pinned_version_id is not None:
            message = for_request(request).gettext(
                "This assignment is pinned to version %(number)d of the set, so its students would not see a new "
                "one; unpin it in the assignment's settings first."
            )
            raise Conflict(message % {"number": courses.version_of(session, found.assignment).number})
        archive = with_alias(sets.loaded_version(settings, latest), alias)
    except (Invalid, Conflict) as exc:
        session.rollback()
        return gradebook_response(request, session, user, slug, offering_id, exc.status_code, alias_error=exc.message)
    work = functools.partial(_store, request.app.state, user.id, offering_id, archive, slug, alias, latest.number)
    label = f"{slug} + {alias.problem_id} {alias.part_id} “{alias.answer.strip()}”"
    job = upload_jobs(request).start(owner_id=user.id, filename=label, work=work)
    return RedirectResponse(f"/instructor/uploads/{job.id}", status_code=303)


def _store(
    state: Any, user_id: int, offering_id: int, archive: bytes, slug: str, alias: Alias, base: int, job: UploadJob
) -> tuple[int, dict[str, Any]]:
    """The upload's validation and storage, refused if another version was stored since ``base`` (it would be
    lost); a stored version adds the regrade link to the report page."""
    status, context = validate_and_store(state, user_id, offering_id, archive, f"{slug}.tar.gz", job, based_on=base)
    if status == 200 and context.get("stored", {}).get("created"):
        query = urlencode({"offering": offering_id, "problem": alias.problem_id, "below_full": "on"})
        context["alias_added"] = {
            "problem": alias.problem_id,
            "part": alias.part_id,
            "answer": alias.answer.strip(),
            "regrade_url": f"/instructor/sets/{slug}/regrade?{query}",
        }
    return status, context
