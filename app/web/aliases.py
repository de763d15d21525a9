"""Accept a common wrong answer in one click: from the gradebook's statistics, a new version of the set with the
answer among the blank's aliases, validated by the upload gate (the upload's progress page follows it), then a
link to the bulk regrade of that problem, which previews the scores the alias changes."""

from __future__ import annotations

import functools
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.courses import course_sets
from app.courses.access import access_for
from app.deps import RowIdQuery
from app.errors import Conflict, Invalid
from app.problemsets.aliases import Alias
from app.web.deps import CheckedForm, WebInstructor, WebSession, WebSettings
from app.web.i18n import error_text
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
    try:
        edit = course_sets.prepare_alias(session, settings, access_for(session, user), slug, offering, alias)
    except (Invalid, Conflict) as exc:
        session.rollback()
        shown = error_text(request, exc)
        return gradebook_response(request, session, user, slug, offering, exc.status_code, alias_error=shown)

    work = functools.partial(_store, request.app.state, user.id, edit, slug, alias)
    label = f"{slug} + {alias.problem_id} {alias.part_id} “{alias.answer.strip()}”"
    job = UploadJob(owner_id=user.id, filename=label)
    upload_jobs(request).start(job, work)
    return RedirectResponse(f"/instructor/uploads/{job.id}", status_code=303)


def _store(
    state: Any, user_id: int, edit: course_sets.AliasEdit, slug: str, alias: Alias, job: UploadJob
) -> tuple[int, dict[str, Any]]:
    """The upload's validation and storage, refused if another version was stored since the edit's base (it would
    be lost); a stored version adds the regrade link to the report page."""
    status, context = validate_and_store(
        state, user_id, edit.offering_id, edit.archive, f"{slug}.tar.gz", job, based_on=edit.based_on
    )
    if status == 200 and context.get("stored", {}).get("created"):
        query = urlencode({"offering": edit.offering_id, "problem": alias.problem_id, "below_full": "on"})
        context["alias_added"] = {
            "problem": alias.problem_id,
            "part": alias.part_id,
            "answer": alias.answer.strip(),
            "regrade_url": f"/instructor/sets/{slug}/regrade?{query}",
        }
    return status, context
