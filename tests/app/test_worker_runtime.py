"""The Celery sweeper: which jobs it sends again."""

from __future__ import annotations

from datetime import timedelta

from app.config import Settings
from app.db import utcnow
from app.submissions import service
from app.submissions.models import Status
from app.users.models import User


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
        alice = session.get(User, accounts["alice"].id)
        for name, (status, age_s, lease_s) in rows.items():
            sub, _ = service.create(
                session, settings=settings, user=alice, problem_set="basic", problem_id="t2", answers={"b1": name}
            )
            sub.status, sub.created_at = status, now - timedelta(seconds=age_s)
            sub.lease_until = None if lease_s is None else now + timedelta(seconds=lease_s)
            ids[sub.id] = name
        session.commit()
    assert sorted(ids[i] for i in stranded(sessions, older_than_s=30)) == ["queued_long_ago", "running_expired"]
