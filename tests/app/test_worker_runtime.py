"""Celery workers: they grade on a runtime built from the settings they were given, and sweep only stranded jobs."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from celery import Celery

from app.config import Settings, get_settings
from app.db import utcnow
from app.submissions.models import Status, Submission
from app.wiring import wire_celery_worker
from tests.app.conftest import submit_as


@pytest.fixture
def misleading_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The environment names another, empty database: a worker reading it would never find the job."""
    monkeypatch.setenv("AUTOGRADER_DATABASE_URL", f"sqlite:///{tmp_path / 'elsewhere.db'}")
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_celery_worker_grades_with_the_settings_it_was_started_with(  # type: ignore[no-untyped-def]
    accounts, basic_set, settings: Settings, sessions, monkeypatch: pytest.MonkeyPatch, misleading_environment
) -> None:
    from app.worker import celery_app

    with sessions() as session:
        sub_id = submit_as(session, settings, accounts["alice"].id, "basic", "t2", answers={"b1": "B"}).id

    # Instead of consuming a broker, the started worker runs one delivery of the task in this process.
    def deliver_once(celery: Celery, argv: list[str]) -> None:
        celery.tasks[celery_app.TASK].apply(args=[sub_id], throw=True)

    monkeypatch.setattr(Celery, "worker_main", deliver_once)
    with wire_celery_worker(settings.model_copy(update={"broker_url": "memory://"}), slots=1) as runtime:
        runtime.start()  # the worker command's order: its services, then Celery's loop, on the one runtime
        celery_app.run_worker(runtime, concurrency=1)

    with sessions() as session:
        graded = session.get(Submission, sub_id)
        assert graded.status == Status.GRADED, graded.error
        assert graded.grade is not None and graded.grade.auto_score == graded.grade.max_score


def test_sweeper_resends_only_stranded_jobs(accounts, basic_set, settings: Settings, sessions) -> None:  # type: ignore[no-untyped-def]
    from app.worker.celery_app import stranded

    now = utcnow()
    rows = {  # name: (status, created this long ago, lease running out in)
        "queued_just_now": (Status.QUEUED, 0, None),
        "queued_long_ago": (Status.QUEUED, 120, None),
        "running_expired": (Status.RUNNING, 0, -1),
        "running_held": (Status.RUNNING, 120, 60),
        "graded": (Status.GRADED, 120, None),
    }
    ids = {}
    with sessions() as session:
        for name, (status, age_s, lease_s) in rows.items():
            sub = submit_as(session, settings, accounts["alice"].id, "basic", "t2", answers={"b1": name})
            sub.status, sub.created_at = status, now - timedelta(seconds=age_s)
            sub.lease_until = None if lease_s is None else now + timedelta(seconds=lease_s)
            ids[sub.id] = name
        session.commit()
    assert sorted(ids[i] for i in stranded(sessions, older_than_s=30)) == ["queued_long_ago", "running_expired"]
