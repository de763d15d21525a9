"""What every grading worker runs on, built once from the settings it was given and closed as one."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

from app.config import Settings
from app.db import engine_for, make_session_factory
from app.problemsets.variants import close_variant_checkers
from app.worker.code_grader import LazyCodeGrader
from app.worker.grading import GradingJob
from app.worker.inline import InlineGrader
from app.worker.services import Services


class WorkerRuntime:
    """Owns a database engine, its session factory, a lazily built code grader, the GradingJob using them, the
    InlineGrader the API's requests use, and the process's background services (app.wiring fills them), which
    ``start`` starts and ``close`` stops before the sandbox and the engine are closed."""

    def __init__(
        self,
        settings: Settings,
        *,
        slots: int | None = None,
        code_grader: LazyCodeGrader | None = None,
        requeue: Callable[[int], None] | None = None,
    ) -> None:
        self.settings = settings
        self.engine = engine_for(settings)
        self.session_factory = make_session_factory(self.engine)
        # `serve` hands over the grader it validated the shipped sets with, so grading starts on a warm sandbox.
        self.code_grader = code_grader or LazyCodeGrader(settings, slots=slots)
        self.job = GradingJob(settings, self.session_factory, self.code_grader, requeue=requeue)
        # The API's requests grade fill-in answers themselves (app/worker/inline.py).
        self.inline = InlineGrader(settings, self.job)
        # SQLite has one writer. The API's requests that store (and grade) a submission take turns here, woken as
        # soon as the one before commits, rather than in SQLite's busy handler, which sleeps up to 100 ms between
        # tries: under 50 concurrent posts that made the slowest wait seconds.
        self.write_gate: contextlib.AbstractContextManager[Any] = (
            threading.Lock() if self.engine.dialect.name == "sqlite" else contextlib.nullcontext()
        )

        self.services = Services()

    def start(self) -> None:
        """Start the wired background services, in the order app.wiring added them."""
        self.services.start()

    def prewarm(self) -> None:
        """Start the sandbox now if the settings ask for it, so the first code submission does not wait."""
        if self.settings.prewarm_sandbox:
            self.code_grader.prewarm()

    def close(self) -> None:
        """Stop the background services (reverse order), the sandbox (if it was started), then release the
        database connections."""
        self.services.stop()
        self.code_grader.close()
        close_variant_checkers()
        self.engine.dispose()

    def __enter__(self) -> WorkerRuntime:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
