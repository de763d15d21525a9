"""Submissions: create (202 + status URL, ?wait=N for CI, Idempotency-Key), read, list."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from app.access_log import note
from app.courses.policy import policy_for
from app.deps import Offset, Principal, PrincipalDep, RowId, RowIdQuery, SessionDep, SettingsDep
from app.error_format import error_responses
from app.input_types import FiniteSeconds
from app.problemsets.service import loaded_version
from app.submissions import service
from app.submissions.events import SAFETY_POLL_S, GradeEvents
from app.submissions.gradescope import GradescopeResults, from_public
from app.submissions.intake import parse_api_body
from app.submissions.models import Source
from app.submissions.presenter import submission_public, submission_summary
from app.submissions.release import SealCache, is_full, seal_for, seal_of_new
from app.submissions.schemas import SubmissionCreate, SubmissionPublic, SubmissionSummary

log = logging.getLogger(__name__)
router = APIRouter(prefix="/submissions", tags=["submissions"])

_BODY_DOC: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            # Inline: FastAPI reads this body itself (intake), so it would not add the model to the components.
            "application/json": {"schema": SubmissionCreate.model_json_schema()},
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["problem_set", "problem"],
                    "additionalProperties": False,
                    "properties": {
                        "problem_set": {"type": "string", "maxLength": 64},
                        "problem": {"type": "string", "maxLength": 64},
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "a .py file or a notebook, .ipynb (code problems)",
                        },
                        "answers": {"type": "string", "description": "JSON object: part id -> text"},
                        "source": {"type": "string", "enum": ["web", "api", "ci"]},
                    },
                }
            },
        },
    }
}


@router.post(
    "",
    status_code=202,
    response_model=SubmissionPublic,
    openapi_extra=_BODY_DOC,
    responses=error_responses(400, 404, 409, 415, 429),
)
async def create_submission(
    request: Request,
    response: Response,
    principal: PrincipalDep,
    settings: SettingsDep,
    wait: Annotated[FiniteSeconds, Query(description="block up to N seconds for the result (CI)")] = 0,
    # An empty key would be stored as "" and collide with the next empty one: refused here, like a long one.
    idempotency_key: Annotated[str | None, Header(min_length=1, max_length=128)] = None,
) -> SubmissionPublic:
    """Store a submission (status queued) for a worker to grade; 202 with its status URL.

    JSON (answers or code) or multipart (a .py file). With ``?wait=N`` the call returns as soon as the grade is in,
    or after N seconds with the current status. A repeated ``Idempotency-Key`` returns the first submission.
    Too many submissions per minute (per user, per token) get 429 with ``Retry-After``; nothing is stored.
    """
    principal.require("submit")
    # Before the body is read or anything stored: a refused submission leaves no trace but its count.
    await run_in_threadpool(
        request.app.state.limiter.submission, user_id=principal.user.id, token_id=principal.token_id
    )
    body = await parse_api_body(request)
    source = Source(body.source) if body.source else (Source.CI if principal.via_token else Source.API)
    user = principal.user

    def store() -> tuple[int, SubmissionPublic | None]:
        # One trip to a worker thread: store, grading a fill-in answer here first (app/worker/inline.py), or hand
        # the submission to the workers.
        inline = request.app.state.runtime.inline
        with request.app.state.runtime.write_gate, request.app.state.session_factory() as session:
            stored = service.store(
                session,
                settings=settings,
                user=user,
                access=principal.access,
                offering_id=body.offering,
                problem_set=body.problem_set,
                problem_id=body.problem,
                answers=body.answers,
                code=body.code,
                source=source,
                idempotency_key=idempotency_key,
                inline=inline if inline.enabled else None,
            )
            sub = stored.submission
            if not stored.created:
                return sub.id, None
            if stored.graded:
                loaded = loaded_version(settings, sub.problem_set_version)
                full = sub.grade is not None and is_full(sub.grade.auto_score, sub.grade.max_score)
                seal = seal_of_new(session, principal.access, sub, loaded.spec, assignment=stored.assignment,
                                   member=stored.member, full_now=full)  # fmt: skip
                return sub.id, submission_public(sub, loaded, seal=seal)
        _dispatch(request, sub.id)
        return sub.id, None

    sub_id, graded = await run_in_threadpool(store)
    note(request, submission_id=sub_id, problem_set=body.problem_set, problem=body.problem)
    response.headers["Location"] = f"/api/v1/submissions/{sub_id}"
    view = graded or await _wait_and_read(request, sub_id, min(wait, settings.max_wait_s), principal)
    note(request, verdict=view.verdict)
    return view


def _dispatch(request: Request, sub_id: int) -> None:
    # The submission is stored: a broker hiccup must not turn that into an error. Workers' sweepers re-send it.
    try:
        request.app.state.dispatch(sub_id)
    except Exception:
        log.exception("could not dispatch submission %s; a sweeper will pick it up", sub_id)


async def _wait_and_read(request: Request, sub_id: int, wait: float, principal: Principal) -> SubmissionPublic:
    """Read the submission; with ``wait``, block until its grade is written (woken by the worker, not by polling)."""
    deadline = time.monotonic() + wait
    events: GradeEvents = request.app.state.grade_events
    with events.listen(sub_id) as finished_event:  # registered before the first read: no wake-up is missed
        while True:
            view, finished = await run_in_threadpool(_read, request, sub_id, principal)
            remaining = deadline - time.monotonic()
            if finished or remaining <= 0:
                return view
            with contextlib.suppress(TimeoutError):  # the safety poll: a lost notification costs seconds, not all
                await asyncio.wait_for(finished_event.wait(), min(remaining, SAFETY_POLL_S))
            finished_event.clear()


def _read(request: Request, sub_id: int, principal: Principal) -> tuple[SubmissionPublic, bool]:
    settings = request.app.state.settings
    with request.app.state.session_factory() as session:
        sub = service.get(session, submission_id=sub_id, access=principal.access)
        loaded = loaded_version(settings, sub.problem_set_version)
        seal = seal_for(session, sub, principal.access, loaded.spec)
        return submission_public(sub, loaded, seal=seal), service.is_finished(sub)


@router.get("/{submission_id}", response_model=SubmissionPublic | GradescopeResults)
def get_submission(
    submission_id: RowId,
    principal: PrincipalDep,
    session: SessionDep,
    settings: SettingsDep,
    fmt: Annotated[
        Literal["default", "gradescope"],
        Query(alias="format", description="gradescope: Gradescope's results.json, filtered for the viewer"),
    ] = "default",
) -> SubmissionPublic | GradescopeResults:
    """A submission: status, and what the assignment's release policy shows now (score, per-check results and
    feedback, explanation, answer key). Others' submissions are 404, except to staff of its offering.

    ``?format=gradescope`` returns the same view as Gradescope's results.json (docs/gradescope.md).
    """
    principal.require("read")
    sub = service.get(session, submission_id=submission_id, access=principal.access)
    loaded = loaded_version(settings, sub.problem_set_version)
    view = submission_public(sub, loaded, seal=seal_for(session, sub, principal.access, loaded.spec))
    if fmt != "gradescope":
        return view
    return from_public(view, due_at=policy_for(sub.assignment, loaded.spec, sub.problem_id, None).due_at)


@router.get("", response_model=list[SubmissionSummary])
def list_submissions(
    principal: PrincipalDep,
    session: SessionDep,
    problem_set: str | None = None,
    problem: str | None = None,
    user_id: RowIdQuery = None,
    offering: RowIdQuery = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Offset = 0,
) -> list[SubmissionSummary]:
    """Your own submissions in your offerings, and everyone's in the offerings you teach (filter with user_id,
    offering)."""
    principal.require("read")
    rows = service.list_for(
        session,
        access=principal.access,
        problem_set=problem_set,
        problem_id=problem,
        user_id=user_id,
        offering_id=offering,
        limit=limit,
        offset=offset,
    )
    seals = SealCache(session, principal.access)
    return [submission_summary(s, seal=seals(s)) for s in rows]
