"""Request and response models of the webhook endpoints."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class EndpointCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    url: str = Field(max_length=2000, examples=["https://ci.example.edu/hooks/autograder"])
    events: list[str] = Field(
        min_length=1,
        max_length=4,
        examples=[["submission.graded", "submission.error"]],
        description="some of submission.graded, submission.error, submission.regraded, grade.manual_updated",
    )


class EndpointPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    url: str
    events: list[str]
    token_id: int | None
    is_active: bool
    disabled_reason: str | None
    created_at: datetime


class EndpointCreated(EndpointPublic):
    secret: str = Field(description="whsec_...: verify signatures with it; shown only now")


class AttemptPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    attempt: int
    status_code: int | None
    latency_ms: float
    error: str | None
    at: datetime


class DeliveryPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    message_id: str = Field(description="the webhook-id header: the same on every retry and redelivery")
    event_type: str
    submission_id: int | None
    status: str = Field(description="pending, succeeded, failed (retries exhausted), abandoned (endpoint disabled)")
    attempts: int
    next_attempt_at: datetime | None
    created_at: datetime
    delivered_at: datetime | None
    attempt_log: list[AttemptPublic]
