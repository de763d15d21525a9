"""Scale-out dispatch: with AUTOGRADER_BROKER_URL set, the API enqueues submission ids to Celery (Redis or
RabbitMQ) and `autograder worker` processes on any machine grade them.

The database stays the source of truth: a task only carries an id, the worker claims the row with the same
conditional UPDATE as the embedded pool, so a redelivered task (at-least-once) never grades twice at once. A
sweeper in each worker re-sends jobs whose message was lost (broker down at submit time, a worker killed
mid-grading, an internal error to retry), so nothing stays queued forever.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from celery import Celery
from sqlalchemy import or_, select
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.db import session_scope, utcnow
from app.submissions.events import redis_publisher
from app.submissions.models import Submission
from app.worker.claims import claim, claimable, lease_expired, worker_id
from app.worker.runtime import WorkerRuntime
from app.worker.sweeper import OrphanSweeper

log = logging.getLogger(__name__)
TASK = "autograder.grade_submission"
RETRY_DELAY_S = 5
SWEEP_EVERY_S = 30.0


def make_celery(settings: Settings, runtime: WorkerRuntime | None = None) -> Celery:
    """A Celery app on the settings' broker; with a runtime it also runs the grading task on that runtime."""
    celery = Celery("autograder", broker=settings.broker_url)
    celery.conf.update(
        task_acks_late=True,  # a worker killed mid-grading leaves the message for another worker
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],  # never pickle
        task_default_queue="grading",
        broker_connection_retry_on_startup=True,
        worker_hijack_root_logger=False,  # keep app.logs' JSON lines (autograder worker configures the root logger)
    )
    if runtime is not None:  # the API only sends the task by name: it never needs a runtime

        def grade_submission(task: Any, submission_id: int) -> None:
            _grade(runtime, task.request.id, submission_id)

        # Not shared: a shared task would be registered on every later Celery app of the process, bound to this
        # runtime even after it was closed.
        celery.task(name=TASK, bind=True, shared=False)(grade_submission)
    return celery


# One quick retry (a pooled connection gone stale when the broker restarted), then fail: a request must not hang
# on a broker that is down. The outbox (app/worker/outbox.py) sends the row again when the broker is back.
SEND_RETRY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.2}


def make_enqueue(settings: Settings, *, countdown: float = 0) -> Callable[[int], None]:
    celery = make_celery(settings)

    def enqueue(submission_id: int) -> None:
        celery.send_task(TASK, args=[submission_id], countdown=countdown or None, retry_policy=SEND_RETRY)

    return enqueue


def _grade(runtime: WorkerRuntime, delivery_id: str, submission_id: int) -> None:
    job = runtime.job
    me = worker_id(f"celery-{delivery_id}")  # unique per delivery, so two deliveries never share a claim
    with session_scope(job.session_factory) as session:
        settings = job.settings
        if not claim(session, submission_id, worker=me, lease_s=settings.job_lease_s,
                     max_attempts=settings.max_grading_attempts):  # fmt: skip
            log.info("submission %s is not claimable (already graded or held); skipping", submission_id)
            return
    job.run(submission_id, me)


def stranded(session_factory: sessionmaker[Session], older_than_s: float) -> list[int]:
    """Claimable jobs whose message was probably lost: running past their lease, or queued for a while."""
    now = utcnow()
    # A job queued a moment ago still has its message on the way; sending another would only duplicate it.
    old = Submission.created_at < now - timedelta(seconds=older_than_s)
    with session_factory() as session:
        rows = session.scalars(select(Submission.id).where(claimable(now), or_(lease_expired(now), old)))
        return list(rows)


def _sweep_forever(runtime: WorkerRuntime, stop: threading.Event) -> None:
    enqueue = make_enqueue(runtime.settings)
    failing = False
    while not stop.wait(SWEEP_EVERY_S):
        try:
            for submission_id in stranded(runtime.session_factory, older_than_s=SWEEP_EVERY_S):
                enqueue(submission_id)
            failing = False
        except Exception as exc:  # the broker or the database is down: one line per outage, not one per pass
            if not failing:
                log.warning("sweeper failed (%s: %s); trying again every %s s", type(exc).__name__, exc, SWEEP_EVERY_S)
            failing = True


def _send_all(enqueue: Callable[[int], None]) -> Callable[[list[int]], None]:
    def send(ids: list[int]) -> None:
        for submission_id in ids:
            enqueue(submission_id)  # if the broker is down, the rows stay queued for the API's outbox sweep

    return send


class StrandedSweeper:
    """Sends again, every SWEEP_EVERY_S, the claimable jobs whose message was probably lost (app.worker.celery_app
    ``stranded``)."""

    def __init__(self, runtime: WorkerRuntime) -> None:
        self._runtime = runtime
        self._stop = threading.Event()

    def start(self) -> None:
        threading.Thread(target=_sweep_forever, args=(self._runtime, self._stop), name="sweeper", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()


def sweepers(runtime: WorkerRuntime) -> list[tuple[str, Any]]:
    """The Celery worker's two sweepers, for app.wiring: lost messages, and jobs of this host's killed workers."""
    # A worker of this host killed mid-grading: its message stays unacked in the broker until the visibility
    # timeout (an hour), its row held until the lease; the orphan sweeper requeues it within seconds instead.
    send = _send_all(make_enqueue(runtime.settings))
    orphans = OrphanSweeper(runtime.session_factory, runtime.settings.max_grading_attempts, send)
    return [("stranded-job sweeper", StrandedSweeper(runtime)), ("orphan sweeper", orphans)]


def run_worker(runtime: WorkerRuntime, concurrency: int) -> None:
    """Grade deliveries in ``concurrency`` threads, one sandbox slot each, on the runtime app.wiring built (its
    background services already started); returns when Celery's loop ends."""
    settings = runtime.settings
    if (settings.broker_url or "").startswith("redis"):  # wake the API's ?wait requests as grades land
        runtime.job.on_finished = redis_publisher(settings.broker_url or "")
    make_celery(settings, runtime).worker_main(
        ["worker", "--loglevel=INFO", f"--concurrency={concurrency}", "--pool=threads", "-Q", "grading"]
    )
