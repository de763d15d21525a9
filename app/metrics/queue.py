"""Metrics read from the database at scrape time: the same numbers whichever process (API or worker) is asked.

Submissions by status and source, the queue depth and the age of the oldest queued submission: the queue lives in
the submission table (Celery only carries ids), so the table is the truth.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from app.db import utcnow
from app.submissions.models import Status, Submission


class QueueCollector(Collector):
    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self.session_factory = session_factory

    def collect(self) -> Iterator[Metric]:
        with self.session_factory() as session:
            counts = session.execute(
                select(Submission.status, Submission.source, func.count()).group_by(
                    Submission.status, Submission.source
                )
            ).all()
            oldest = session.scalar(select(func.min(Submission.created_at)).where(Submission.status == Status.QUEUED))
        by_status = GaugeMetricFamily(
            "autograder_submissions", "Submissions stored, by status and source", labels=["status", "source"]
        )
        queued = 0
        for status, source, count in counts:
            by_status.add_metric([str(status), str(source)], count)
            queued += count if status == Status.QUEUED else 0
        yield by_status
        yield GaugeMetricFamily("autograder_queue_depth", "Submissions waiting for a grader", value=queued)
        age = 0.0
        if oldest is not None:
            oldest = oldest if oldest.tzinfo else oldest.replace(tzinfo=utcnow().tzinfo)
            age = max(0.0, (utcnow() - oldest).total_seconds())
        yield GaugeMetricFamily(
            "autograder_queue_oldest_age_seconds", "Age of the oldest queued submission (0 when none)", value=age
        )
