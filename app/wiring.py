"""Which background services each kind of process runs, and in which order: written once, here.

| process | services, in start order (stopped in reverse) |
|---|---|
| `serve`, embedded | sandbox · grading pool · webhooks · LTI passback · set loader? · rate limiter |
| `serve`, broker | relay (Redis) · outbox · set loader? · rate limiter |
| `worker`, polling | sandbox · grading pool · webhooks · LTI passback |
| `worker`, Celery | sandbox · webhooks · LTI passback · stranded-job sweeper · orphan sweeper, then Celery's loop |

The runtime (app.worker.runtime.WorkerRuntime) owns the process's one engine and its list of services; ``close``
stops them in reverse order before the sandbox (with its checker processes) and the engine are closed. "?" marks a
service only some settings have: the relay with a Redis broker, the outbox with any broker, the set loader under
`serve` with the shipped sets (app.problemsets.set_loader). Roster syncs run inside requests, not in the background.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from app.config import Settings
from app.courses.service import default_assignment
from app.lti.sender import PassbackSender
from app.problemsets.set_loader import SetLoader
from app.ratelimit.service import Limiter, build_limiter
from app.submissions.events import GradeEvents, RedisRelay
from app.webhooks.sender import WebhookSender
from app.worker.code_grader import LazyCodeGrader
from app.worker.outbox import BrokerOutbox, broker_answers
from app.worker.pool import EmbeddedPool
from app.worker.runtime import WorkerRuntime
from app.worker.services import Hook


@dataclass
class ServeWiring:
    """What `serve`'s app keeps a handle on (app.state), besides the runtime."""

    runtime: WorkerRuntime
    grade_events: GradeEvents
    limiter: Limiter
    pool: EmbeddedPool | None = None
    sender: WebhookSender | None = None
    passback: PassbackSender | None = None
    relay: RedisRelay | None = None
    outbox: BrokerOutbox | None = None
    loader: SetLoader | None = None

    def dispatch(self) -> Callable[[int], None]:
        """How a stored submission reaches a grader: the broker's outbox, the embedded pool, or nobody (tests)."""
        if self.outbox is not None:
            return self.outbox.dispatch
        pool = self.pool
        return (lambda _id: pool.notify()) if pool is not None else (lambda _id: None)


def wire_serve(
    settings: Settings,
    *,
    start_workers: bool = True,
    code_grader: LazyCodeGrader | None = None,
    load_sets: bool = False,
) -> ServeWiring:
    """The API process. Its runtime is built in every mode: requests need its sessions, and uploads validate with its
    (lazy) code grader. With a broker there is no pool, and the grader is built only if a set has code problems."""
    runtime = WorkerRuntime(settings, code_grader=code_grader)
    services = runtime.services
    embedded = settings.broker_url is None and settings.workers > 0
    # ?wait requests are woken when their grade is written: by the embedded workers directly, or through Redis
    # from the scale-out workers (app.submissions.events).
    grade_events = GradeEvents()
    runtime.job.on_finished = grade_events.finished
    wiring = ServeWiring(runtime, grade_events, build_limiter(settings, runtime.session_factory))
    broker = settings.broker_url or ""
    if broker.startswith("redis"):
        wiring.relay = services.add("relay", RedisRelay(broker, grade_events))
    if settings.broker_url:
        wiring.outbox = services.add("outbox", _outbox(settings, runtime))
    if embedded:
        wiring.pool = EmbeddedPool(runtime.job, settings.workers)
        # Webhooks and LMS grades are sent where grading happens: here with embedded workers, else by the workers.
        wiring.sender = WebhookSender(settings, runtime.session_factory)
        wiring.passback = PassbackSender(settings, runtime.session_factory)
        if start_workers:
            services.add("sandbox", Hook(on_start=runtime.prewarm))
            services.add("grading pool", wiring.pool)
            services.add("webhooks", wiring.sender)
            services.add("lti passback", wiring.passback)
    if load_sets:
        # With the grading sandbox: the gate's gradings take turns with the students' for its slots. A thread: the
        # port opens now, whatever the sets' gates cost.
        wiring.loader = SetLoader(
            settings,
            runtime.session_factory,
            runtime.code_grader,
            assign=default_assignment,
            write_gate=runtime.write_gate,
        )
        services.add("set loader", wiring.loader)
    services.add("rate limiter", Hook(on_stop=wiring.limiter.close))
    return wiring


def wire_polling_worker(settings: Settings, slots: int) -> WorkerRuntime:
    """`autograder worker` without a broker: a pool that polls the database, and the senders beside it."""
    runtime = WorkerRuntime(settings, slots=slots)
    services = runtime.services
    pool = EmbeddedPool(runtime.job, slots, poll_s=0.5)
    services.add("sandbox", Hook(on_start=runtime.prewarm))
    services.add("grading pool", pool)
    services.add("webhooks", WebhookSender(settings, runtime.session_factory))
    services.add("lti passback", PassbackSender(settings, runtime.session_factory))
    return runtime


def wire_celery_worker(settings: Settings, slots: int) -> WorkerRuntime:
    """`autograder worker` with a broker: Celery's grading threads run on this runtime (app.worker.celery_app),
    beside the senders and the two sweepers, all on the runtime's one engine."""
    from app.worker.celery_app import RETRY_DELAY_S, make_enqueue, sweepers

    runtime = WorkerRuntime(settings, slots=slots, requeue=make_enqueue(settings, countdown=RETRY_DELAY_S))
    services = runtime.services
    services.add("sandbox", Hook(on_start=runtime.prewarm))
    services.add("webhooks", WebhookSender(settings, runtime.session_factory))
    services.add("lti passback", PassbackSender(settings, runtime.session_factory))
    for name, sweeper in sweepers(runtime):
        services.add(name, sweeper)
    return runtime


def _outbox(settings: Settings, runtime: WorkerRuntime) -> BrokerOutbox:
    from app.worker.celery_app import make_enqueue

    url = settings.broker_url or ""
    return BrokerOutbox(make_enqueue(settings), runtime.session_factory, lambda: broker_answers(url))
