"""The LTI job: a worker thread that posts due scores to the platforms' line items and schedules retries, and runs
the roster syncs instructors queued (app.lti.roster_sync.run_due_syncs).

The shape of app.webhooks.sender (both are an app.polling_sender.PollingSender): rows are claimed with a
conditional UPDATE (several senders never post one attempt twice), 429 and 5xx (and no answer) are retried after
the next delay with +-20 % jitter or after the platform's Retry-After, other 4xx fail at once with the platform's
message; an instructor can retry a failed row.
A score that changed while its post was in flight is posted again (the row's version moved on).
"""

from __future__ import annotations

import logging
import random
from datetime import timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from app.config import Settings
from app.db import session_scope, utcnow
from app.lti import lineitems as lineitems_of
from app.lti.adapters import DatabaseToolConf
from app.lti.keys import key_store
from app.lti.lineitems import LinkKey
from app.lti.models import LtiContext, LtiPassback, LtiPlatform, LtiResourceLink, LtiUser
from app.lti.passback import release_due
from app.lti.roster_sync import run_due_syncs
from app.lti.services import PlatformClient, ServiceError
from app.polling_sender import PollingSender
from app.retrying import MAX_RETRY_AFTER_S, retry_after

log = logging.getLogger(__name__)


class PassbackSender(PollingSender):
    queue = LtiPassback

    def __init__(self, settings: Settings, session_factory: sessionmaker[Session]) -> None:
        super().__init__(
            settings, session_factory, log=log, name="LTI passback sender", thread_name="lti-passback", join_s=15
        )
        self.tool_conf = DatabaseToolConf(session_factory, key_store(settings.data_dir, settings.lti_key_grace_s))

    def run_once(self, limit: int = 20) -> int:
        """Post the due scores this sender can claim, then run the due roster syncs; returns how many it did."""
        # Held scores whose release by date has come are queued (or held again) first, then posted with the rest.
        released = release_due(self.session_factory)
        made = super().run_once(limit)
        # The roster syncs instructors asked for run in this job too (not in their request).
        return released + made + run_due_syncs(self.session_factory, self.tool_conf)

    def _attempt(self, row_id: int) -> None:
        with self.session_factory() as session:
            row = session.get(LtiPassback, row_id)
            assert row is not None
            link = session.get(LtiResourceLink, row.resource_link_id)
            assert link is not None
            ctx = session.get(LtiContext, link.context_id)
            assert ctx is not None
            platform = session.get(LtiPlatform, ctx.platform_id)
            assert platform is not None
            sub = session.scalar(
                select(LtiUser.sub).where(LtiUser.issuer == platform.issuer, LtiUser.user_id == row.user_id)
            )
            version = row.version
            score = {
                "userId": sub, "scoreGiven": row.score, "scoreMaximum": row.max_score,
                "activityProgress": row.activity_progress, "gradingProgress": row.grading_progress,
                # AGS keeps the score with the newest timestamp: the time of the change, not of the attempt.
                "timestamp": row.changed_at.isoformat(timespec="microseconds"),
            }  # fmt: skip
            if row.grading_progress != "FullyGraded":
                # Pending and PendingManual carry no score (docs/lti.md): the LMS shows the work as waiting for a
                # grade, not a partial number read as final (the automatic part of an essay's problem set).
                score.pop("scoreGiven")
            lineitem, lineitems = link.lineitem_url, ctx.lineitems_url
            label, max_score = link.title or "autograder", row.max_score
            key = LinkKey(platform.id, ctx.deployment_id, ctx.context_id, link.resource_link_id)
            client = PlatformClient(platform, self.tool_conf)
        status: int | None = None
        error: str | None = None
        wait_s: float | None = None
        try:
            if sub is None:
                raise ServiceError("the user has no LMS identity on this platform any more", 404)
            if lineitem is None:
                if not lineitems:
                    raise ServiceError("the LMS gave no line item and no line items URL for this link", 404)
                # One line item per link whatever the number of senders (app.lti.lineitems).
                lineitem = lineitems_of.ensure(
                    self.session_factory, client, key, lineitems_url=lineitems, label=label,
                    score_maximum=max_score or 1.0, link_row_id=link.id,
                )  # fmt: skip
            status = client.post_score(lineitem, score)
        except lineitems_of.Busy:
            # Another process is making the link's line item: this row waits a moment, no attempt spent.
            self._defer(row_id, lineitems_of.WAIT_S)
            return
        except ServiceError as exc:
            status, error, wait_s = exc.status, str(exc)[:2000], retry_after(exc.retry_after)
        finally:
            client.close()
        self._record(row_id, version, status, error, wait_s)

    def _defer(self, row_id: int, wait_s: float) -> None:
        with session_scope(self.session_factory) as session:
            session.execute(
                update(LtiPassback)
                .where(LtiPassback.id == row_id, LtiPassback.status == "pending")
                .values(next_attempt_at=utcnow() + timedelta(seconds=wait_s))
            )

    def _record(
        self, row_id: int, version: int, status: int | None, error: str | None, retry_after: float | None
    ) -> None:
        with session_scope(self.session_factory) as session:
            row = session.get(LtiPassback, row_id, with_for_update=True)
            assert row is not None
            row.attempts += 1
            row.last_status_code, row.last_error = status, error
            if row.status == "held":
                # The release policy hid a newer score while this post was in flight: it stays held (the
                # score posted was one the student could see when it was queued).
                if error is None:
                    row.sent_version, row.sent_at = version, utcnow()
                outcome = "held"
            elif error is None:
                row.sent_version, row.sent_at = version, utcnow()
                changed = row.version != version  # a newer score was queued while this one was in flight
                row.status, row.next_attempt_at = ("pending", utcnow()) if changed else ("sent", None)
                outcome = "sent"
            elif (status is None or status == 429 or status >= 500) and row.attempts <= len(
                self.settings.lti_passback_retry_delays_s
            ):
                delay = self.settings.lti_passback_retry_delays_s[row.attempts - 1] * random.uniform(0.8, 1.2)  # noqa: S311 (jitter)
                if retry_after is not None:
                    delay = min(max(retry_after, 0.0), MAX_RETRY_AFTER_S)
                row.next_attempt_at = utcnow() + timedelta(seconds=delay)
                outcome = "retrying"
            else:
                row.status, row.next_attempt_at = "failed", None
                outcome = "failed"
        log.info(
            "LTI passback %s attempt: %s", row_id, outcome,
            extra={"fields": {"event": "lti_passback", "passback_id": row_id, "status": status, "outcome": outcome}},
        )  # fmt: skip
