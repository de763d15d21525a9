"""The code similarity report of one code problem (app.gradebook.similarity): started from the gradebook as a
background job of this process (app.web.background_jobs) whose page follows its progress, then lists the most
similar pairs with a side-by-side view of each and a CSV. For staff who may read submissions (instructors and TAs by
the permission matrix); never shown to students, never a penalty. Kept in memory for an hour after it ends."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse

from app.courses.access import access_for
from app.courses.permissions import Action
from app.deps import RowIdQuery
from app.errors import Conflict, Invalid, NotFound
from app.gradebook import similarity
from app.web.background_jobs import BackgroundJobs, Job
from app.web.deps import CheckedForm, WebGradebookReader, WebSession
from app.web.i18n import N_, error_text, for_request
from app.web.page_route import WebRoute
from app.web.rendering import render, render_fragment

router = APIRouter(route_class=WebRoute)
_REGISTRY_LOCK = threading.Lock()


@dataclass(kw_only=True)
class SimilarityJob(Job):
    slug: str
    offering_id: int
    problem_id: str
    done_steps: int = 0
    total_steps: int = 1
    report: similarity.Report | None = field(default=None, repr=False)


def _jobs(request: Request) -> BackgroundJobs[SimilarityJob]:
    state = request.app.state
    with _REGISTRY_LOCK:  # made on first use: only a server whose staff run the report keeps one
        if getattr(state, "similarity_jobs", None) is None:
            state.similarity_jobs = BackgroundJobs(
                name="similarity", failure={"error": N_("The similarity report failed on our side; try again.")}
            )
        jobs: BackgroundJobs[SimilarityJob] = state.similarity_jobs
    return jobs


@router.post("/instructor/sets/{slug}/similarity")
def start(
    request: Request, slug: str, form: CheckedForm, user: WebGradebookReader, session: WebSession,
    offering: RowIdQuery = None,
) -> Response:  # fmt: skip
    """Compare the counted submissions of one code problem in the background; then the report's page."""
    problem = str(form.get("problem", ""))[:64]
    jobs, tr = _jobs(request), for_request(request)
    try:
        if jobs.running(owner_id=user.id):
            raise Conflict(tr.gettext("Your previous similarity report is still running: wait for it to end."))
        offering_id, entries, references = similarity.counted_entries(
            session, request.app.state.settings, access_for(session, user), slug, offering, problem
        )
    except (Invalid, Conflict) as exc:
        return render(request, "instructor/similarity.html", exc.status_code, job=None, error=error_text(request, exc),
                      slug=slug)  # fmt: skip
    session.rollback()  # only read
    job = SimilarityJob(owner_id=user.id, slug=slug, offering_id=offering_id, problem_id=problem)
    job.total_steps = max(1, len(entries) + len(entries) * (len(entries) - 1) // 2)

    def work(job: SimilarityJob) -> tuple[int, dict[str, Any]]:
        def progress(done: int, total: int) -> None:
            job.done_steps, job.total_steps = done, max(total, 1)

        pairs = similarity.similar_pairs(entries, references, progress)
        job.report = similarity.Report(slug, offering_id, problem, len(entries), pairs)
        return 200, {}

    if not jobs.start(job, work, alone=True):
        raise Conflict(tr.gettext("Your previous similarity report is still running: wait for it to end."))
    return RedirectResponse(f"/instructor/similarity/{job.id}", status_code=303)


def _job(request: Request, session: WebSession, user: Any, job_id: str) -> SimilarityJob:
    """The caller's own report, while they may still read submissions in its offering (404 otherwise)."""
    job = _jobs(request).get(job_id[:64], owner_id=user.id)
    if job is None or not access_for(session, user).can(job.offering_id, Action.READ_SUBMISSIONS):
        raise NotFound(for_request(request).gettext("No such similarity report (kept for an hour after it ends)."))
    return job


@router.get("/instructor/similarity/{job_id}")
def report_page(request: Request, job_id: str, user: WebGradebookReader, session: WebSession) -> Response:
    """The report's progress (refreshed in place), then the most similar pairs, most similar first."""
    job = _job(request, session, user, job_id)
    return render(request, "instructor/similarity.html", 200 if job.done else 202, job=job, slug=job.slug,
                  shown=similarity.SHOWN_PAIRS)  # fmt: skip


@router.get("/instructor/similarity/{job_id}/live")
def report_live(request: Request, job_id: str, user: WebGradebookReader, session: WebSession) -> Response:
    job = _job(request, session, user, job_id)
    response = HTMLResponse(render_fragment(request, "instructor/_similarity.html", job=job,
                                            shown=similarity.SHOWN_PAIRS))  # fmt: skip
    response.headers["X-Progress"] = "done" if job.done else "running"
    response.headers["Cache-Control"] = "no-store"
    return response


@router.get("/instructor/similarity/{job_id}/pairs/{index}")
def pair_page(request: Request, job_id: str, index: int, user: WebGradebookReader, session: WebSession) -> Response:
    """Two submissions side by side, the code they share marked in each."""
    job = _job(request, session, user, job_id)
    if job.report is None or not 0 <= index < len(job.report.pairs):
        raise NotFound(for_request(request).gettext("No such pair in this report."))
    pair = job.report.pairs[index]
    return render(request, "instructor/similarity_pair.html", job=job, pair=pair, index=index,
                  left=similarity.marked(pair.a.code, pair.slices_a),
                  right=similarity.marked(pair.b.code, pair.slices_b))  # fmt: skip


@router.get("/instructor/similarity/{job_id}/csv")
def report_csv(request: Request, job_id: str, user: WebGradebookReader, session: WebSession) -> Response:
    job = _job(request, session, user, job_id)
    if job.report is None:
        raise NotFound(for_request(request).gettext("The report is not ready yet."))
    name = f"similarity-{job.slug}-{job.problem_id}.csv"
    return Response(similarity.to_csv(job.report), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})  # fmt: skip
