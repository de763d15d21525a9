"""Webhook endpoints and events: register (secret shown once), list, delete, queue deliveries, ping, redeliver.

Two kinds of endpoint: personal ones (per API token or session, by its owner) get the events of the owner's own
submissions; an offering's ones (registered by one of its instructors, managed by every instructor of it: the
WEBHOOKS action of app.courses.permissions) get the events of every submission in that offering.

Events are queued as delivery rows in the same transaction that writes what they announce (a grade, an error), so
a committed grade always has its deliveries and a rolled-back one never does. The sender (sender.py) sends them.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from datetime import datetime

from sqlalchemy import ColumnElement, Select, and_, bindparam, or_, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.courses.models import Assignment
from app.db import utcnow
from app.errors import Invalid, NotFound
from app.submissions.models import Submission
from app.users.models import ApiToken, User
from app.webhooks.models import WebhookDelivery, WebhookEndpoint
from app.webhooks.targets import check_target

EVENTS = ("submission.graded", "submission.error", "submission.regraded", "grade.manual_updated")
PING = "webhook.ping"
MAX_ENDPOINTS_PER_USER = 20
MAX_ENDPOINTS_PER_OFFERING = 20


def new_secret() -> str:
    return "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()


def new_message_id() -> str:
    return "msg_" + uuid.uuid4().hex


def create_endpoint(
    session: Session,
    *,
    settings: Settings,
    user: User,
    token_id: int | None,
    url: str,
    events: list[str],
    offering_id: int | None = None,
) -> WebhookEndpoint:
    """Register an endpoint (an offering's when ``offering_id`` is given: the caller checked the WEBHOOKS action);
    its secret is on the returned row, for the response that shows it once."""
    unknown = sorted(set(events) - set(EVENTS))
    if unknown or not events:
        raise Invalid(f"unknown or no events {unknown}; expected some of {list(EVENTS)}", field="events")
    # With private targets allowed, the name may only resolve on the CI runner's network: not looked up here.
    check_target(url, allow_private=settings.webhook_allow_private, resolve=not settings.webhook_allow_private)
    if offering_id is None:
        if len(list_endpoints(session, user=user)) >= MAX_ENDPOINTS_PER_USER:
            raise Invalid(f"at most {MAX_ENDPOINTS_PER_USER} webhook endpoints per user", field="url")
    elif len(list_offering_endpoints(session, offering_id=offering_id)) >= MAX_ENDPOINTS_PER_OFFERING:
        raise Invalid(f"at most {MAX_ENDPOINTS_PER_OFFERING} webhook endpoints per offering", field="url")
    endpoint = WebhookEndpoint(
        user_id=user.id, offering_id=offering_id, token_id=token_id, url=url, secret=new_secret(),
        events=sorted(set(events)), is_active=True,
    )  # fmt: skip
    session.add(endpoint)
    session.flush()
    return endpoint


def list_endpoints(session: Session, *, user: User) -> list[WebhookEndpoint]:
    """The user's personal endpoints (an offering's are listed under the offering)."""
    stmt = select(WebhookEndpoint).where(WebhookEndpoint.user_id == user.id, WebhookEndpoint.offering_id.is_(None))
    return list(session.scalars(stmt.order_by(WebhookEndpoint.id)))


def list_offering_endpoints(session: Session, *, offering_id: int) -> list[WebhookEndpoint]:
    stmt = select(WebhookEndpoint).where(WebhookEndpoint.offering_id == offering_id)
    return list(session.scalars(stmt.order_by(WebhookEndpoint.id)))


def get_endpoint(session: Session, *, user: User, endpoint_id: int) -> WebhookEndpoint:
    """One of the user's personal endpoints."""
    endpoint = session.get(WebhookEndpoint, endpoint_id)
    # Someone else's endpoint, or an offering's, is a 404 here, not a 403.
    if endpoint is None or endpoint.user_id != user.id or endpoint.offering_id is not None:
        raise NotFound(f"no webhook endpoint {endpoint_id}", field="endpoint_id")
    return endpoint


def get_offering_endpoint(session: Session, *, offering_id: int, endpoint_id: int) -> WebhookEndpoint:
    """One endpoint of an offering (the caller checked the WEBHOOKS action there)."""
    endpoint = session.get(WebhookEndpoint, endpoint_id)
    if endpoint is None or endpoint.offering_id != offering_id:
        raise NotFound(f"no webhook endpoint {endpoint_id} in this offering", field="endpoint_id")
    return endpoint


def deliveries(session: Session, *, endpoint: WebhookEndpoint, limit: int = 100) -> list[WebhookDelivery]:
    stmt = (
        select(WebhookDelivery)
        .where(WebhookDelivery.endpoint_id == endpoint.id)
        .order_by(WebhookDelivery.id.desc())
        .limit(limit)
    )
    return list(session.scalars(stmt))


def _endpoints(whose: ColumnElement[bool]) -> Select[WebhookEndpoint, datetime | None, int | None]:
    return (
        select(WebhookEndpoint, ApiToken.revoked_at, ApiToken.offering_id)
        .outerjoin(ApiToken, ApiToken.id == WebhookEndpoint.token_id)
        .where(whose, WebhookEndpoint.is_active.is_(True))
        .order_by(WebhookEndpoint.id)
    )


# Built once (every grading asks): the submitter's personal endpoints, and those with the offering's.
_MINE = and_(WebhookEndpoint.user_id == bindparam("user_id"), WebhookEndpoint.offering_id.is_(None))
_PERSONAL_ENDPOINTS = _endpoints(_MINE)
_ENDPOINTS = _endpoints(or_(_MINE, WebhookEndpoint.offering_id == bindparam("offering_id")))


def enqueue_event(session: Session, *, user_id: int, event_type: str, submission_id: int) -> int:
    """Queue one delivery per active endpoint that takes this event: the submitter's personal ones and those of the
    submission's offering. Returns how many."""
    offering_id = session.scalar(
        select(Assignment.offering_id)
        .join(Submission, Submission.assignment_id == Assignment.id)
        .where(Submission.id == submission_id)
    )
    return enqueue_for(
        session, user_id=user_id, offering_id=offering_id, event_type=event_type, submission_id=submission_id
    )


def enqueue_for(session: Session, *, user_id: int, offering_id: int | None, event_type: str, submission_id: int) -> int:
    """``enqueue_event`` for a caller that knows the submission's offering (None: outside any) already."""
    if offering_id is None:
        rows = session.execute(_PERSONAL_ENDPOINTS, {"user_id": user_id}).all()
    else:
        rows = session.execute(_ENDPOINTS, {"user_id": user_id, "offering_id": offering_id}).all()
    queued = 0
    for endpoint, revoked_at, token_offering in rows:
        if revoked_at is not None or event_type not in endpoint.events:
            continue
        if token_offering is not None and token_offering != offering_id:
            continue  # registered with a token narrowed to another offering: it never sees this one's submissions
        session.add(
            WebhookDelivery(
                endpoint_id=endpoint.id,
                message_id=new_message_id(),
                event_type=event_type,
                submission_id=submission_id,
                status="pending",
                attempts=0,
                next_attempt_at=utcnow(),
            )
        )
        queued += 1
    return queued


def ping(session: Session, *, endpoint: WebhookEndpoint) -> WebhookDelivery:
    """Queue a test event for one endpoint (whatever its event list)."""
    delivery = WebhookDelivery(
        endpoint_id=endpoint.id, message_id=new_message_id(), event_type=PING, status="pending", attempts=0,
        next_attempt_at=utcnow(),
    )  # fmt: skip
    session.add(delivery)
    session.flush()
    return delivery


def redeliver(session: Session, *, endpoint: WebhookEndpoint, delivery_id: int) -> WebhookDelivery:
    """Send a past delivery again, as a new delivery with the same webhook-id and body (the receiver may dedupe)."""
    old = session.get(WebhookDelivery, delivery_id)
    if old is None or old.endpoint_id != endpoint.id:
        raise NotFound(f"no delivery {delivery_id} for this endpoint", field="delivery_id")
    if not endpoint.is_active:
        raise Invalid("this endpoint is disabled; register it again", field="endpoint_id")
    again = WebhookDelivery(
        endpoint_id=endpoint.id, message_id=old.message_id, event_type=old.event_type,
        submission_id=old.submission_id, body=old.body, status="pending", attempts=0, next_attempt_at=utcnow(),
    )  # fmt: skip
    session.add(again)
    session.flush()
    return again
