"""Request and response models of the auth and token endpoints."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from app.input_types import Instant
from app.safe_text import SafeStr


class LoginRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: SafeStr = Field(max_length=254)
    password: SafeStr = Field(max_length=1024)


class UserPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    email: str
    display_name: str
    role: str = Field(description="the global role: admin or user (course roles are per offering: /offerings)")
    locale: str | None = Field(description="the interface language (en, zh_CN); null: follow the browser")


class UserUpdate(BaseModel):
    """The settings you may change on your own account; a field left out stays as it is."""

    model_config = ConfigDict(extra="forbid")
    locale: SafeStr | None = Field(
        default=None, max_length=16, description="the interface language: en or zh_CN; null: follow the browser"
    )


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: SafeStr = Field(default="token", max_length=100)
    scopes: list[SafeStr] | None = Field(default=None, description="some of submit, read, instructor, metrics")
    expires_at: Instant | None = Field(default=None, description="UTC when no zone is given")
    offering: int | None = Field(default=None, ge=1, le=2**31 - 1, description="narrow the token to this offering")


class TokenPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)
    id: int
    name: str
    prefix: str
    scopes: list[str]
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None
    offering_id: int | None = Field(None, description="the one offering the token may act in; null: all of yours")


class TokenCreated(TokenPublic):
    token: str = Field(description="the token itself; shown once, store it now")
