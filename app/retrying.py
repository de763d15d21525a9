"""What the queued senders (webhooks, LTI grade passback) share: the Retry-After an answer asked for, and the
one-line logging of a database outage while they poll.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from app.db import database_unavailable, exc_text

MAX_RETRY_AFTER_S = 86400  # a Retry-After longer than a day is taken as a day


def retry_after(value: str | None) -> float | None:
    """Retry-After as seconds, or as an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


class OutageLog:
    """A polling loop's log of its failures: a database outage is one line when it starts and one when the
    database answers again (not a traceback every poll); any other failure is logged with its traceback."""

    def __init__(self, log: logging.Logger, name: str) -> None:
        self.log, self.name = log, name
        self.unavailable = False

    def ok(self) -> None:
        """A poll went through: the outage, if there was one, is over."""
        if self.unavailable:
            self.log.info("%s: the database answers again", self.name)
            self.unavailable = False

    def failed(self, exc: BaseException) -> None:
        """A poll raised ``exc`` (call it from the except block, for the traceback)."""
        if not database_unavailable(exc):
            self.log.exception("%s failed; trying again", self.name)
        elif not self.unavailable:
            self.log.warning("%s: database unavailable (%s); trying again", self.name, exc_text(exc))
            self.unavailable = True

    def run(self, poll: Callable[[], int]) -> int:
        """Call one poll of the loop; a failure is logged as above and counts as 0 (nothing done)."""
        try:
            done = poll()
        except Exception as exc:
            self.failed(exc)
            return 0
        self.ok()
        return done
