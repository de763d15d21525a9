"""Claiming jobs from the submission table: a conditional UPDATE, so two workers never take the same job.

A claim is a lease, renewed by the grading worker's heartbeat (``renew``) for as long as it grades: only a worker
that died or hangs lets it run out, and the next claim takes the job over. A takeover counts as a grading attempt,
so a job that kills (or hangs) every worker ends in ERROR instead of looping. On a restart, jobs held by dead
processes of this host are requeued at once. A job requeued after an internal error waits out a growing delay
(``lease_until`` of a QUEUED row is its "not before").
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from sqlalchemy import and_, case, or_, select, update
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from app.db import utcnow
from app.submissions.models import Status, Submission
from graders.sandbox.procfs import pid_alive

HOST = socket.gethostname()


def worker_id(slot: int | str) -> str:
    return f"{HOST}:{os.getpid()}:{slot}"


def lease_expired(now: datetime) -> ColumnElement[bool]:
    """Running past its lease: the worker that claimed it died or hangs."""
    return and_(Submission.status == Status.RUNNING, Submission.lease_until < now)


def claimable(now: datetime) -> ColumnElement[bool]:
    """What a worker may take: a queued job past its retry delay, or a running one whose lease ran out."""
    ready = or_(Submission.lease_until.is_(None), Submission.lease_until <= now)
    return or_(and_(Submission.status == Status.QUEUED, ready), lease_expired(now))


def retry_delay_s(attempts: int) -> float:
    """How long a job waits after its ``attempts``-th internal error: 1, 2, 4, ... seconds, at most a minute."""
    return float(min(60, 2 ** max(0, attempts - 1)))


def claim_next(session: Session, *, worker: str, lease_s: float, max_attempts: int) -> int | None:
    """Take the oldest claimable job; returns its id, or None when there is nothing to do."""
    now = utcnow()
    candidates = session.scalars(select(Submission.id).where(claimable(now)).order_by(Submission.id).limit(8)).all()
    for candidate in candidates:
        if claim(session, candidate, worker=worker, lease_s=lease_s, max_attempts=max_attempts):
            return candidate
    return None


def claim(session: Session, submission_id: int, *, worker: str, lease_s: float, max_attempts: int) -> bool:
    """Take one job if it is claimable; a takeover of an expired lease counts as a grading attempt."""
    now = utcnow()
    # A takeover that would be one attempt too many ends the job instead: it outlived its lease that often.
    session.execute(
        update(Submission)
        .where(Submission.id == submission_id, lease_expired(now), Submission.grading_attempts + 1 >= max_attempts)
        .values(
            status=Status.ERROR,
            grading_attempts=Submission.grading_attempts + 1,
            claimed_by=None,
            lease_until=None,
            error="internal grading error: the grading outlived its lease on every attempt (a worker died or hung)",
        )
        .execution_options(synchronize_session=False)
    )
    takeover = Submission.status == Status.RUNNING
    result = session.execute(
        update(Submission)
        .where(Submission.id == submission_id, claimable(now))
        .values(
            status=Status.RUNNING,
            claimed_by=worker,
            lease_until=now + timedelta(seconds=lease_s),
            started_at=now,
            grading_attempts=case((takeover, Submission.grading_attempts + 1), else_=Submission.grading_attempts),
        )
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return result.rowcount == 1  # type: ignore[attr-defined]


def renew(session: Session, submission_id: int, *, worker: str, lease_s: float) -> bool:
    """Extend the lease of a job this worker still holds; False once it was taken over or regraded."""
    now = utcnow()
    result = session.execute(
        update(Submission)
        .where(Submission.id == submission_id, Submission.claimed_by == worker, Submission.status == Status.RUNNING)
        .values(lease_until=now + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return result.rowcount == 1  # type: ignore[attr-defined]


def requeue_orphans(session: Session, max_attempts: int) -> list[int]:
    """Requeue RUNNING jobs claimed by processes of this host that no longer exist (a crash or a kill -9); returns
    the ids requeued (a Celery worker sends them again).

    Each requeue counts as a grading attempt, so a submission that kills its worker every time ends in ERROR
    instead of looping forever.
    """
    rows = session.execute(
        select(Submission.id, Submission.claimed_by).where(
            Submission.status == Status.RUNNING, Submission.claimed_by.like(f"{HOST}:%")
        )
    ).all()
    dead, dead_claimers = [], set()
    for sub_id, claimed_by in rows:
        try:
            pid = int((claimed_by or "").split(":")[1])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not pid_alive(pid):
            dead.append(sub_id)
            dead_claimers.add(claimed_by)
    if not dead:
        session.commit()  # end the read transaction, as the requeue below would
        return []
    requeued = []
    # Locked and still held by the dead claimer: another process's sweep may have requeued it meanwhile, and a live
    # worker claimed it since; that claim must stand.
    held = select(Submission).where(
        Submission.id.in_(dead), Submission.status == Status.RUNNING, Submission.claimed_by.in_(dead_claimers)
    )
    for sub in session.scalars(held.with_for_update().execution_options(populate_existing=True)):
        sub.grading_attempts += 1
        sub.claimed_by, sub.lease_until = None, None
        sub.error = f"internal grading error (attempt {sub.grading_attempts}): the grading process died"
        sub.status = Status.ERROR if sub.grading_attempts >= max_attempts else Status.QUEUED
        if sub.status == Status.QUEUED:
            requeued.append(sub.id)
    session.commit()
    return requeued
