"""LTI API bodies: a platform registration in and out, and the values to paste into an LMS."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class PlatformCreate(BaseModel):
    name: str = Field(default="", max_length=200)
    issuer: str = Field(max_length=500, description="the platform's iss, e.g. https://canvas.instructure.com")
    client_id: str = Field(max_length=255, description="the client id the LMS gave this tool")
    deployment_ids: list[str] = Field(min_length=1, max_length=50)
    auth_login_url: str = Field(max_length=2000, description="the platform's OIDC authorization endpoint")
    auth_token_url: str = Field(max_length=2000, description="the platform's OAuth2 token endpoint")
    keyset_url: str = Field(max_length=2000, description="the platform's public keys (JWKS)")
    auth_audience: str | None = Field(default=None, max_length=2000)


class PlatformPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    name: str
    issuer: str
    client_id: str
    deployment_ids: list[str]
    auth_login_url: str
    auth_token_url: str
    keyset_url: str
    auth_audience: str | None
    created_at: datetime


class ToolValuesPublic(BaseModel):
    """Paste these into Canvas (developer key, LTI key) or Moodle (Site admin > External tool > Manage tools)."""

    base_url: str
    login_initiation_url: str
    redirect_urls: list[str]
    target_link_uri: str
    deep_linking_url: str
    jwks_url: str
    domain: str
    scopes: list[str]
