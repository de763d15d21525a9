"""The delivery job: a worker thread that sends due deliveries, signed per Standard Webhooks, and schedules retries.

Never run in a request handler. Every process that grades (the embedded pool of `serve`, `autograder worker`) runs
one sender; a delivery is claimed with a conditional UPDATE, so several senders never send one attempt twice.

- 2xx: delivered. 410 Gone: the endpoint is disabled (the receiver asked us to stop).
- Anything else (or no answer within the timeout): retried after the next delay of the schedule with +-20 %
  jitter, or after the receiver's Retry-After when it sent one; after the last delay the delivery is failed.
"""

from __future__ import annotations

import json
import logging
import random
import time
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks.webhooks import Webhook

from app.config import Settings
from app.courses.access import access_for
from app.courses.permissions import Action
from app.db import session_scope, utcnow
from app.errors import DomainError
from app.metrics.registry import WEBHOOK_DELIVERIES
from app.polling_sender import PollingSender
from app.problemsets.service import loaded_version
from app.retrying import MAX_RETRY_AFTER_S, retry_after
from app.submissions.models import Submission
from app.submissions.presenter import submission_public
from app.submissions.release import seal_for
from app.users.models import ApiToken, User
from app.webhooks.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint
from app.webhooks.targets import Target, check_target

log = logging.getLogger(__name__)
_Outcome = tuple[int | None, str | None, float | None, float]


class WebhookSender(PollingSender):
    queue = WebhookDelivery

    def __init__(self, settings: Settings, session_factory: sessionmaker[Session]) -> None:
        super().__init__(
            settings, session_factory, log=log, name="webhook sender", thread_name="webhook-sender",
            join_s=settings.webhook_timeout_s + 5,  # a POST in flight may finish
        )  # fmt: skip
        # No kept-alive connections: a connection is made to the address checked for this attempt and verified
        # for this URL's name, so reusing it for another URL on the same address would skip that URL's checks.
        self._http = httpx.Client(
            timeout=settings.webhook_timeout_s, follow_redirects=False, trust_env=False,
            limits=httpx.Limits(max_keepalive_connections=0),
        )  # fmt: skip

    def stop(self) -> None:
        super().stop()
        self._http.close()

    def _attempt(self, delivery_id: int) -> None:
        with session_scope(self.session_factory) as session:
            delivery = session.get(WebhookDelivery, delivery_id)
            assert delivery is not None
            endpoint = session.get(WebhookEndpoint, delivery.endpoint_id)
            assert endpoint is not None
            if endpoint.is_active and endpoint.offering_id is not None and not _owner_manages(session, endpoint):
                # Its instructor left the offering (or lost the role): nothing more of it goes out on their key.
                endpoint.is_active = False
                endpoint.disabled_reason = "its owner no longer manages this offering's webhooks; register it again"
            if not endpoint.is_active:
                delivery.status = "abandoned"
                return
            if delivery.body is None:  # built once: every retry sends the same bytes
                delivery.body = self._body(session, delivery, endpoint)
            url, secret, body, message_id = endpoint.url, endpoint.secret, delivery.body, delivery.message_id
            attempt = delivery.attempts + 1
        status_code, error, retry_after, latency_ms = self._send(url, secret, message_id, body)
        self._record(delivery_id, attempt, status_code, error, retry_after, latency_ms)

    def _body(self, session: Session, delivery: WebhookDelivery, endpoint: WebhookEndpoint) -> str:
        data: dict[str, object]
        if delivery.submission_id is None:
            data = {"endpoint_id": endpoint.id, "message": "test ping"}
        else:
            sub = session.get(Submission, delivery.submission_id)
            assert sub is not None
            token = session.get(ApiToken, endpoint.token_id) if endpoint.token_id else None
            # What the endpoint's owner sees through GET /submissions/{id} with its token: the same memberships,
            # scope and offering narrowing, and the same release policy (a session-registered endpoint acts as its
            # user; an offering's endpoint acts as its instructor, narrowed to that offering).
            scopes = set(token.scopes) if token is not None else {"instructor"}
            owner = session.get(User, endpoint.user_id)
            only = endpoint.offering_id or (token.offering_id if token is not None else None)
            try:
                assert owner is not None
                access = access_for(session, owner, staff_scope="instructor" in scopes, only_offering=only)
                loaded = loaded_version(self.settings, sub.problem_set_version)
                seal = seal_for(session, sub, access, loaded.spec)
                data = json.loads(submission_public(sub, loaded, seal=seal).model_dump_json())
            except Exception as exc:
                # The set version cannot be read (what made grading fail, often): the error event still goes out.
                log.warning("webhook body of submission %s without its view: %s", sub.id, type(exc).__name__)
                data = {"id": sub.id, "status": sub.status, "problem": sub.problem_id, "attempt": sub.attempt,
                        "user_id": sub.user_id, "status_url": f"/api/v1/submissions/{sub.id}"}  # fmt: skip
        envelope = {"type": delivery.event_type, "timestamp": utcnow().isoformat(), "data": data}
        return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))

    def _send(self, url: str, secret: str, message_id: str, body: str) -> _Outcome:
        """One signed POST: (status code or None, error or None, Retry-After seconds or None, latency in ms)."""
        start = time.perf_counter()
        try:
            # Again at every attempt: the name may resolve elsewhere now than at registration. Resolved once, here:
            # the connection goes to an address this check saw, never to what a second lookup answers.
            target = check_target(url, allow_private=self.settings.webhook_allow_private)
            now = datetime.now(UTC)
            signature = Webhook(secret).sign(message_id, now, body)
            headers = {
                "host": target.host_header,
                "content-type": "application/json",
                "webhook-id": message_id,
                "webhook-timestamp": str(int(now.timestamp())),
                "webhook-signature": signature,
                "user-agent": "autograder-webhooks/1",
            }
            resp = self._post(target, body.encode(), headers)
        except DomainError as exc:
            return None, exc.message[:300], None, 0.0
        except httpx.HTTPError as exc:
            return None, f"{type(exc).__name__}: {exc}"[:300], None, (time.perf_counter() - start) * 1000
        latency_ms = (time.perf_counter() - start) * 1000
        return resp.status_code, None, retry_after(resp.headers.get("retry-after")), latency_ms

    def _post(self, target: Target, content: bytes, headers: dict[str, str]) -> httpx.Response:
        """POST to the first checked address that takes the connection. TLS sends, and verifies the certificate
        for, the URL's own name (the ``sni_hostname`` extension), not the address connected to."""
        extensions = {"sni_hostname": target.server_name} if target.server_name else None
        for address in target.addresses[:-1]:
            try:
                return self._http.post(target.pinned_url(address), content=content, headers=headers,
                                       extensions=extensions)  # fmt: skip
            except httpx.ConnectError:
                continue  # the next address of the name, as a resolver-driven client would
        return self._http.post(target.pinned_url(target.addresses[-1]), content=content, headers=headers,
                               extensions=extensions)  # fmt: skip

    def _record(
        self, delivery_id: int, attempt: int, status_code: int | None, error: str | None,
        retry_after: float | None, latency_ms: float,
    ) -> None:  # fmt: skip
        with session_scope(self.session_factory) as session:
            delivery = session.get(WebhookDelivery, delivery_id)
            assert delivery is not None
            endpoint = session.get(WebhookEndpoint, delivery.endpoint_id)
            assert endpoint is not None
            session.add(
                WebhookAttempt(
                    delivery_id=delivery_id, attempt=attempt, status_code=status_code,
                    latency_ms=round(latency_ms, 2), error=error,
                )
            )  # fmt: skip
            delivery.attempts = attempt
            if status_code is not None and 200 <= status_code < 300:
                delivery.status, delivery.delivered_at, delivery.next_attempt_at = "succeeded", utcnow(), None
                outcome = "succeeded"
            elif status_code == 410:
                delivery.status, delivery.next_attempt_at = "abandoned", None
                endpoint.is_active, endpoint.disabled_reason = False, "the receiver answered 410 Gone"
                outcome = "disabled"
            elif attempt > len(self.settings.webhook_retry_delays_s):
                delivery.status, delivery.next_attempt_at = "failed", None
                outcome = "failed"
            else:
                delay = self.settings.webhook_retry_delays_s[attempt - 1] * random.uniform(0.8, 1.2)  # noqa: S311 (jitter)
                if retry_after is not None:
                    delay = min(max(retry_after, 0.0), MAX_RETRY_AFTER_S)
                delivery.next_attempt_at = utcnow() + timedelta(seconds=delay)
                outcome = "retrying"
        WEBHOOK_DELIVERIES.labels(outcome=outcome).inc()
        log.info(
            "webhook delivery %s attempt %s: %s", delivery_id, attempt, outcome,
            extra={"fields": {"event": "webhook_attempt", "delivery_id": delivery_id, "attempt": attempt,
                              "status": status_code, "outcome": outcome, "duration_ms": round(latency_ms, 2)}},
        )  # fmt: skip


def _owner_manages(session: Session, endpoint: WebhookEndpoint) -> bool:
    """Whether the instructor who registered an offering's endpoint may still manage the offering's webhooks."""
    owner = session.get(User, endpoint.user_id)
    if owner is None or not owner.is_active:
        return False
    return access_for(session, owner, only_offering=endpoint.offering_id).can(endpoint.offering_id, Action.WEBHOOKS)
