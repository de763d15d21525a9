"""``?wait`` is woken by the worker that writes the grade, not by polling the database in a loop."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient

from app.api import submissions as submissions_router
from app.courses import course_sets
from app.main import create_app
from app.submissions.events import GradeEvents
from tests.conftest import FIXTURE_SETS

SLOW_ADD = "import time\n\ndef add(a, b):\n    time.sleep(0.75)\n    return a + b\n"  # two checks: 1.5 s


def test_a_waiting_request_reads_the_submission_a_few_times_not_once_per_poll(
    settings, accounts, sessions, monkeypatch
):  # type: ignore[no-untyped-def]
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "codeset", grader=None)
        session.commit()
    reads = []
    real_read = submissions_router._read

    def counting_read(*args, **kwargs):  # type: ignore[no-untyped-def]
        reads.append(1)
        return real_read(*args, **kwargs)

    monkeypatch.setattr(submissions_router, "_read", counting_read)
    with TestClient(create_app(settings.model_copy(update={"prewarm_sandbox": True}))) as client:
        body = {"problem_set": "codeset", "problem": "c1", "code": "def add(a, b):\n    return a + b\n"}
        client.post("/api/v1/submissions", params={"wait": 60}, json=body, headers=accounts["alice"].headers)
        reads.clear()  # the sandbox is warm now; measure one slow grading
        body["code"] = SLOW_ADD
        view = client.post("/api/v1/submissions", params={"wait": 60}, json=body, headers=accounts["alice"].headers)
    assert view.json()["status"] == "graded", view.text
    # The first read, the one after the wake-up, and at most one safety poll (every 2 s); polling read ~20 times.
    assert len(reads) <= 3, len(reads)


def test_grade_events_wake_only_the_waiters_of_that_submission() -> None:
    events = GradeEvents()

    async def scenario() -> tuple[bool, bool, int]:
        with events.listen(1) as one, events.listen(2) as two:
            assert events.waiting() == 2
            asyncio.get_running_loop().call_later(0.01, events.finished, 1)  # as a worker thread would
            await asyncio.wait_for(one.wait(), 5)
            return one.is_set(), two.is_set(), events.waiting()

    # A thread of its own: Playwright's sync API (the browser tests) keeps a loop running in the main thread for the
    # rest of the session, and in a parallel run this test may come after those in the same process.
    with ThreadPoolExecutor(1) as thread:
        assert thread.submit(asyncio.run, scenario()).result() == (True, False, 2)
    assert events.waiting() == 0


def test_finishing_a_submission_nobody_waits_for_is_harmless() -> None:
    events = GradeEvents()
    events.finished(12345)
    assert events.waiting() == 0
