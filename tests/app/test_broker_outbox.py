"""The outbox of the scale-out API, in-process against a real (private) Redis: with the broker down a post is
stored and answered 202 without waiting on it, /healthz says degraded, and when the broker is back every queued row
is in its queue, without any worker or request to trigger it."""

from __future__ import annotations

import base64
import json
import logging
import time
from pathlib import Path

import pytest
import redis
from fastapi.testclient import TestClient

from app.main import create_app
from app.worker.outbox import PROBE_EVERY_S
from tests.app.fault_stack import PrivateRedis, free_port, wait_until

ANSWERS = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Encoder", "b2": "32"}}


def queued_ids(url: str) -> set[int]:
    """The submission ids in the Celery queue (kombu's Redis transport: a JSON envelope, the body base64 JSON)."""
    ids = set()
    for raw in redis.Redis.from_url(url).lrange("grading", 0, -1):
        envelope = json.loads(raw)
        args, _kwargs, _embed = json.loads(base64.b64decode(envelope["body"]))
        ids.add(int(args[0]))
    return ids


@pytest.mark.redis
def test_posts_while_the_broker_is_down_are_sent_when_it_is_back(settings, accounts, basic_set, tmp_path: Path, caplog):  # type: ignore[no-untyped-def]
    broker = PrivateRedis(tmp_path, port=free_port())  # not started: nothing listens on its port yet
    # Answers graded by the API need no broker (app/worker/inline.py): off, so that these wait in the outbox.
    scale_out = settings.model_copy(update={"broker_url": broker.url, "workers": 0, "grade_answers_inline": False})
    caplog.set_level(logging.INFO, logger="app.worker.outbox")
    try:
        with TestClient(create_app(scale_out)) as client:
            headers = accounts["alice"].headers
            wait_until(
                "the outbox notices the broker is down", lambda: client.get("/healthz").json()["broker"] == "down"
            )
            health = client.get("/healthz")
            assert health.status_code == 200
            assert health.json() == {"status": "degraded", "broker": "down", "workers": "celery"}
            ids, slowest = [], 0.0
            for _ in range(5):
                start = time.monotonic()
                resp = client.post("/api/v1/submissions", json=ANSWERS, headers=headers)
                slowest = max(slowest, time.monotonic() - start)
                assert resp.status_code == 202, resp.text
                assert resp.json()["status"] == "queued"
                ids.append(resp.json()["id"])
            print(f"\nslowest post with the broker down: {slowest * 1000:.0f} ms")

            broker.start()
            took = wait_until(
                "the queued rows reach the broker", lambda: queued_ids(broker.url) >= set(ids), bound_s=60
            )
            print(f"all {len(ids)} in the broker's queue {took:.1f} s after it started (probe every {PROBE_EVERY_S} s)")
            assert client.get("/healthz").json() == {"status": "ok", "broker": "up", "workers": "celery"}
    finally:
        broker.stop()
    messages = [r.getMessage() for r in caplog.records if r.name == "app.worker.outbox"]
    assert sum("broker unreachable" in m for m in messages) == 1, messages
    assert sum("broker is back" in m for m in messages) == 1, messages
    assert not [r for r in caplog.records if r.exc_info], "no traceback for an outage"
