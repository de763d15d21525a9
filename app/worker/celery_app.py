"""Scale-out dispatch: with AUTOGRADER_BROKER_URL set, the API enqueues submission ids to Celery (Redis or
RabbitMQ) and `autograder worker` processes on any machine grade them.

The database stays the source of truth: a task only carries an id, the worker claims the row with the same
conditional UPDATE as the embedded pool, so a redelivered task (at-least-once) never grades twice at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import lru_cache

from celery import Celery

from app.config import Settings, get_settings
from app.db import make_engine, make_session_factory, session_scope
from app.worker.claims import claim, worker_id
from app.worker.code_grader import LazyCodeGrader
from app.worker.grading import GradingJob

log = logging.getLogger(__name__)
TASK = "autograder.grade_submission"


def make_celery(settings: Settings) -> Celery:
    celery = Celery("autograder", broker=settings.broker_url)
    celery.conf.update(
        task_acks_late=True,  # a worker killed mid-grading leaves the message for another worker
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_serializer="json",
        accept_content=["json"],  # never pickle
        task_default_queue="grading",
        broker_connection_retry_on_startup=True,
    )
    celery.task(name=TASK, bind=True, max_retries=3)(_grade_task)
    return celery


@lru_cache
def _job() -> GradingJob:
    settings = get_settings()
    return GradingJob(
        settings, make_session_factory(make_engine(settings.resolved_database_url)), LazyCodeGrader(settings)
    )


def _grade_task(task: object, submission_id: int) -> None:
    job = _job()
    me = worker_id(f"celery-{submission_id}")
    with session_scope(job.session_factory) as session:
        if not claim(session, submission_id, worker=me, lease_s=job.settings.grading_lease_s):
            log.info("submission %s is not claimable (already graded or held); skipping", submission_id)
            return
    job.run(submission_id, me)


def make_enqueue(settings: Settings) -> Callable[[int], None]:
    celery = make_celery(settings)

    def enqueue(submission_id: int) -> None:
        celery.send_task(TASK, args=[submission_id])

    return enqueue


def run_worker(settings: Settings, concurrency: int) -> None:
    celery = make_celery(settings)
    celery.worker_main(["worker", "--loglevel=INFO", f"--concurrency={concurrency}", "--pool=threads", "-Q", "grading"])
