"""One wiring of the background services (app.wiring): each kind of process runs the services its table says, in
that order, stops them in reverse when its runtime closes, and keeps stopping the others when one fails to stop."""

from __future__ import annotations

import pytest

from app import wiring
from app.config import Settings
from app.worker.services import Hook, Services


def test_services_start_in_order_and_stop_in_reverse_even_when_one_fails() -> None:
    events: list[str] = []

    def boom() -> None:
        events.append("stop b")
        raise RuntimeError("b does not stop")

    services = Services()
    services.add("a", Hook(lambda: events.append("start a"), lambda: events.append("stop a")))
    services.add("b", Hook(lambda: events.append("start b"), boom))
    services.add("c", Hook(lambda: events.append("start c"), lambda: events.append("stop c")))
    with pytest.raises(ValueError, match="already wired"):
        services.add("a", Hook())
    services.start()
    services.start()  # a second start starts nothing twice
    assert services.running == ["a", "b", "c"]
    services.stop()
    assert events == ["start a", "start b", "start c", "stop c", "stop b", "stop a"]
    assert services.running == []


def test_a_service_that_fails_to_start_leaves_the_started_ones_stoppable() -> None:
    events: list[str] = []

    def refuse() -> None:
        raise OSError("port taken")

    services = Services()
    services.add("a", Hook(lambda: events.append("start a"), lambda: events.append("stop a")))
    services.add("b", Hook(refuse))
    with pytest.raises(OSError, match="port taken"):
        services.start()
    services.stop()
    assert events == ["start a", "stop a"]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_each_process_wires_what_the_table_says(settings: Settings) -> None:
    served = wiring.wire_serve(settings, load_sets=True)
    assert served.runtime.services.names == [
        "sandbox", "grading pool", "webhooks", "lti passback", "set loader", "rate limiter",
    ]  # fmt: skip
    served.runtime.close()

    quiet = wiring.wire_serve(settings, start_workers=False)
    assert quiet.runtime.services.names == ["rate limiter"] and quiet.pool is not None
    quiet.runtime.close()

    brokered = settings.model_copy(update={"broker_url": "redis://127.0.0.1:6379/9"})
    behind_broker = wiring.wire_serve(brokered)
    assert behind_broker.runtime.services.names == ["relay", "outbox", "rate limiter"]
    assert behind_broker.pool is None and behind_broker.dispatch() == behind_broker.outbox.dispatch  # type: ignore[union-attr]
    behind_broker.runtime.close()

    polling = wiring.wire_polling_worker(settings, slots=1)
    assert polling.services.names == ["sandbox", "grading pool", "webhooks", "lti passback"]
    polling.close()

    celery = wiring.wire_celery_worker(brokered, slots=1)
    assert celery.services.names == ["sandbox", "webhooks", "lti passback", "stranded-job sweeper", "orphan sweeper"]
    celery.close()


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_polling_worker_runtime_starts_and_stops_every_service(settings: Settings) -> None:
    runtime = wiring.wire_polling_worker(settings.model_copy(update={"prewarm_sandbox": False}), slots=1)
    runtime.start()
    assert runtime.services.running == ["sandbox", "grading pool", "webhooks", "lti passback"]
    runtime.close()
    assert runtime.services.running == []
