"""The FastAPI app factory: settings in, app out. Starts the embedded workers unless a broker is configured."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.types import Scope

from app import disk_space
from app.access_log import AccessLog
from app.api.courses import router as courses_router
from app.api.gradebook import router as gradebook_router
from app.api.lti import router as lti_router
from app.api.metrics import router as metrics_router
from app.api.problemsets import router as problemsets_router
from app.api.submissions import router as submissions_router
from app.api.users import router as users_router
from app.api.webhooks import offering_router as offering_webhooks_router
from app.api.webhooks import router as webhooks_router
from app.config import Settings, get_settings
from app.deps import get_principal
from app.error_format import ServerErrors, install_error_handlers, install_openapi
from app.limits import BodySizeLimit, RefuseNul
from app.metrics import registry as metrics
from app.ratelimit.errors import install_handler as install_rate_limit_handler
from app.request_id import RequestIdMiddleware
from app.security_headers import SecurityHeaders
from app.session_cookie import SessionCookie
from app.users.password_checks import PasswordChecks
from app.web.too_large import HtmlTooLarge
from app.web.trial_jobs import trial_jobs
from app.web.upload_jobs import upload_jobs
from app.wiring import wire_serve
from app.worker.code_grader import LazyCodeGrader

log = logging.getLogger(__name__)


def create_app(
    settings: Settings | None = None,
    *,
    start_workers: bool = True,
    code_grader: LazyCodeGrader | None = None,
    load_sets: bool = False,
) -> FastAPI:
    """Build the app. ``code_grader`` lets `serve` hand over the sandbox it already warmed. ``load_sets`` (`serve`
    with load_problems_on_start): the lifespan loads and gates the problems folder in the background, after the
    port is open (app.problemsets.set_loader), and `/healthz` shows each set's state."""
    settings = settings or get_settings()
    # Which background services run, and in which order they start and stop: app.wiring, written once.
    wiring = wire_serve(settings, start_workers=start_workers, code_grader=code_grader, load_sets=load_sets)
    runtime = wiring.runtime
    pool, outbox, loader, limiter = wiring.pool, wiring.outbox, wiring.loader, wiring.limiter

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        runtime.start()
        try:
            yield
        finally:
            runtime.close()

    app = FastAPI(
        title="autograder",
        version="0.1.0",
        description="Autograding for course exercises: fill-in answers and sandboxed Python code.",
        lifespan=lifespan,
    )
    app.state.settings = settings
    app.state.runtime = runtime
    app.state.engine = runtime.engine
    app.state.session_factory = runtime.session_factory
    app.state.code_grader = runtime.code_grader
    # Long jobs of the pages, in this process's memory (app/web/background_jobs.py): upload gates, trial regrades.
    app.state.upload_jobs = upload_jobs()
    app.state.trial_jobs = trial_jobs()
    app.state.pool = pool
    app.state.grade_events = wiring.grade_events
    app.state.limiter = limiter
    app.state.password_checks = PasswordChecks(settings.password_checks)
    app.state.webhook_sender = wiring.sender
    app.state.lti_passback = wiring.passback
    app.state.set_loader = loader
    app.state.outbox = outbox
    app.state.dispatch = wiring.dispatch()

    def limit_for(scope: Scope) -> int:
        path = scope["path"].rstrip("/")
        is_upload = path in ("/api/v1/problem-sets", "/instructor/upload") and scope.get("method") == "POST"
        return settings.max_upload_bytes if is_upload else settings.max_body_bytes

    app.add_middleware(BodySizeLimit, limit_for=limit_for)
    app.add_middleware(HtmlTooLarge)  # pages get an HTML 413, the API keeps its JSON
    disk_space.install(app, settings.data_dir, settings.min_free_disk_bytes)
    app.add_middleware(RefuseNul)
    # Starlette's signed cookie session, SameSite=Lax, or partitioned for a launch in an LMS's iframe.
    app.add_middleware(
        SessionCookie,
        secret_key=settings.resolved_secret_key(),
        session_cookie=settings.session_cookie,
        max_age=settings.session_max_age_s,
        https_only=settings.secure_cookies,
    )
    # Inside the access log and the request id, so a 500 or a 503 is logged and carries the id (Starlette's own
    # handler sits outside all of these).
    app.add_middleware(ServerErrors)
    # One log line per request, inside the request id so the line carries it.
    app.add_middleware(AccessLog, observers=(metrics.observe_http,))
    # Outermost, so every response (a refused body, a 500) carries the id.
    app.add_middleware(RequestIdMiddleware)
    # Outside all of them, so a refusal or a 500 carries the headers too; it reads the session the endpoint left.
    app.add_middleware(SecurityHeaders)
    install_error_handlers(app)
    install_rate_limit_handler(app)
    install_openapi(app, authenticate=get_principal)

    api = APIRouter(prefix="/api/v1")
    api.include_router(users_router)
    api.include_router(problemsets_router)
    api.include_router(submissions_router)
    api.include_router(gradebook_router)
    api.include_router(webhooks_router)
    api.include_router(offering_webhooks_router)
    api.include_router(courses_router)
    api.include_router(lti_router)
    app.include_router(api)
    app.include_router(metrics_router)

    @app.get("/healthz", tags=["ops"], summary="Liveness: the database answers; the broker's state")
    def healthz() -> dict[str, Any]:
        """200 while the database answers. With a broker, `"broker": "up"` or `"down"`; while it is down the status
        is `"degraded"`, still 200: submissions are stored and sent when it is back, so the API stays in service.
        Under `serve`, `"sets"` gives each problem-set folder's state while they are loaded in the background:
        `"queued"`, `"checking 12/41"` (files of its mutant gate graded), `"live"`, `"refused: ..."`, and
        `"live; ..."` while a version is offered and a newer one (or itself, after a change of the checking code)
        is checked or was refused."""
        from sqlalchemy import text

        with runtime.engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        health: dict[str, Any] = {"status": "ok", "workers": "celery" if settings.broker_url else settings.workers}
        if outbox is not None:
            health["broker"] = "up" if outbox.broker_up else "down"
            if not outbox.broker_up:
                health["status"] = "degraded"
        if loader is not None:
            health["sets"] = loader.snapshot()
        return health

    from app.web.router import router as web_router

    app.include_router(web_router)
    return app
