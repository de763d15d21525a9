"""Claiming jobs from the submission table: a conditional UPDATE, so two workers never take the same job.

A claim is a lease: a worker that dies mid-grading leaves a RUNNING row whose lease runs out, and the next claim
takes it again. On a restart, jobs held by dead processes of this host are requeued at once.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select, update
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
    """What a worker may take: a queued job, or a running one whose lease ran out."""
    return or_(Submission.status == Status.QUEUED, lease_expired(now))


def claim_next(session: Session, *, worker: str, lease_s: float) -> int | None:
    """Take the oldest claimable job; returns its id, or None when there is nothing to do."""
    now = utcnow()
    candidates = session.scalars(select(Submission.id).where(claimable(now)).order_by(Submission.id).limit(8)).all()
    for candidate in candidates:
        if claim(session, candidate, worker=worker, lease_s=lease_s):
            return candidate
    return None


def claim(session: Session, submission_id: int, *, worker: str, lease_s: float) -> bool:
    now = utcnow()
    result = session.execute(
        update(Submission)
        .where(Submission.id == submission_id, claimable(now))
        .values(status=Status.RUNNING, claimed_by=worker, lease_until=now + timedelta(seconds=lease_s), started_at=now)
        .execution_options(synchronize_session=False)
    )
    session.commit()
    return result.rowcount == 1  # type: ignore[attr-defined]


def requeue_orphans(session: Session, max_attempts: int) -> int:
    """Requeue RUNNING jobs claimed by processes of this host that no longer exist (a crash or a kill -9).

    Each requeue counts as a grading attempt, so a submission that kills its worker every time ends in ERROR
    instead of looping forever.
    """
    rows = session.execute(
        select(Submission.id, Submission.claimed_by).where(
            Submission.status == Status.RUNNING, Submission.claimed_by.like(f"{HOST}:%")
        )
    ).all()
    dead = []
    for sub_id, claimed_by in rows:
        try:
            pid = int((claimed_by or "").split(":")[1])
        except (IndexError, ValueError):
            continue
        if pid != os.getpid() and not pid_alive(pid):
            dead.append(sub_id)
    for sub in session.scalars(select(Submission).where(Submission.id.in_(dead), Submission.status == Status.RUNNING)):
        sub.grading_attempts += 1
        sub.claimed_by, sub.lease_until = None, None
        sub.error = f"internal grading error (attempt {sub.grading_attempts}): the grading process died"
        sub.status = Status.ERROR if sub.grading_attempts >= max_attempts else Status.QUEUED
    session.commit()
    return len(dead)
