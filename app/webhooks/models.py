"""Webhook endpoints (personal or an offering's), their deliveries (one per event and endpoint) and each
delivery's attempts (the log)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Boolean, Float, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from app.db import Base, UTCDateTime, utcnow


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoint"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user.id", ondelete="CASCADE"), index=True)
    # An offering's endpoint (registered by one of its instructors, managed by all of them) gets every submission
    # event of that offering; None: a personal endpoint that gets its owner's own submissions' events.
    offering_id: Mapped[int | None] = mapped_column(
        ForeignKey("offering.id", ondelete="CASCADE"), nullable=True, index=True
    )
    # The token it was registered with: revoking the token stops its endpoints.
    token_id: Mapped[int | None] = mapped_column(ForeignKey("api_token.id", ondelete="CASCADE"), nullable=True)
    url: Mapped[str] = mapped_column(String(2000))
    # The signing key (whsec_...): shown once at creation. It must be kept readable to sign, unlike a token.
    secret: Mapped[str] = mapped_column(String(100))
    events: Mapped[list[str]] = mapped_column(JSON, default=list)
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled_reason: Mapped[str | None] = mapped_column(String(300), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)


class WebhookDelivery(Base):
    __tablename__ = "webhook_delivery"

    id: Mapped[int] = mapped_column(primary_key=True)
    endpoint_id: Mapped[int] = mapped_column(ForeignKey("webhook_endpoint.id", ondelete="CASCADE"), index=True)
    # webhook-id: the same on every attempt and on a manual redelivery, so the receiver can drop duplicates.
    message_id: Mapped[str] = mapped_column(String(64), index=True)
    event_type: Mapped[str] = mapped_column(String(64))
    submission_id: Mapped[int | None] = mapped_column(ForeignKey("submission.id", ondelete="CASCADE"), nullable=True)
    # The body, built at the first attempt and sent unchanged on every retry.
    body: Mapped[str | None] = mapped_column(Text, nullable=True)
    # pending (waiting for next_attempt_at), succeeded, failed (retries exhausted), abandoned (endpoint disabled)
    status: Mapped[str] = mapped_column(String(20), default="pending", index=True)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True, index=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
    delivered_at: Mapped[datetime | None] = mapped_column(UTCDateTime, nullable=True)

    attempt_log: Mapped[list[WebhookAttempt]] = relationship(order_by="WebhookAttempt.attempt", lazy="selectin")


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempt"

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("webhook_delivery.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    status_code: Mapped[int | None] = mapped_column(Integer, nullable=True)
    latency_ms: Mapped[float] = mapped_column(Float, default=0.0)
    error: Mapped[str | None] = mapped_column(String(300), nullable=True)
    at: Mapped[datetime] = mapped_column(UTCDateTime, default=utcnow)
