"""Platform registrations (issuer, client id, deployments, endpoints) and the values an LMS admin pastes in."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import Conflict, Invalid, NotFound
from app.lti.models import LtiDeployment, LtiPlatform

# The scopes our tool asks for; the LMS admin enables the same ones in the developer key / tool settings.
SCOPES = (
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
    "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly",
)


def _url(value: str, field: str, allow_http: bool) -> str:
    """An https URL (LTI Security Framework: every message and service call over TLS); plain http only where
    AUTOGRADER_LTI_ALLOW_HTTP says so (a test platform on the loopback)."""
    value = value.strip()
    parts = urlsplit(value)
    schemes = ("https", "http") if allow_http else ("https",)
    if parts.scheme not in schemes or not parts.netloc:
        if parts.scheme == "http" and parts.netloc:
            raise Invalid(
                f"{field} must be an https URL, got {value!r} (plain http is for development only: "
                "AUTOGRADER_LTI_ALLOW_HTTP)", field=field,
            )  # fmt: skip
        raise Invalid(f"{field} must be an https URL, got {value!r}", field=field)
    return value


def register_platform(
    session: Session, *, issuer: str, client_id: str, auth_login_url: str, auth_token_url: str, keyset_url: str,
    deployment_ids: list[str], name: str = "", auth_audience: str | None = None, allow_http: bool = False,
) -> LtiPlatform:  # fmt: skip
    """Register (issuer, client id) with its endpoints and deployments; 409 if that pair is registered already.

    The issuer and every URL must be https (``allow_http``: AUTOGRADER_LTI_ALLOW_HTTP, for development)."""
    issuer, client_id = issuer.strip(), client_id.strip()
    if not issuer:
        raise Invalid("issuer is empty", field="issuer")
    issuer = _url(issuer, "issuer", allow_http)  # LTI Core: an https URL (Canvas's, Moodle's site URL)
    if not client_id:
        raise Invalid("client_id is empty", field="client_id")
    exists = session.scalar(
        select(LtiPlatform.id).where(LtiPlatform.issuer == issuer, LtiPlatform.client_id == client_id)
    )
    if exists is not None:
        raise Conflict(f"issuer {issuer!r} with client id {client_id!r} is registered already", field="client_id")
    platform = LtiPlatform(
        name=name.strip() or urlsplit(issuer).netloc or issuer,
        issuer=issuer,
        client_id=client_id,
        auth_login_url=_url(auth_login_url, "auth_login_url", allow_http),
        auth_token_url=_url(auth_token_url, "auth_token_url", allow_http),
        auth_audience=auth_audience.strip() if auth_audience else None,
        keyset_url=_url(keyset_url, "keyset_url", allow_http),
    )
    session.add(platform)
    session.flush()
    for deployment_id in deployment_ids:
        add_deployment(session, platform=platform, deployment_id=deployment_id)
    return platform


def add_deployment(session: Session, *, platform: LtiPlatform, deployment_id: str) -> LtiDeployment:
    deployment_id = deployment_id.strip()
    if not deployment_id:
        raise Invalid("deployment id is empty", field="deployment_ids")
    if any(d.deployment_id == deployment_id for d in platform.deployments):
        raise Conflict(f"deployment {deployment_id!r} is registered already", field="deployment_ids")
    deployment = LtiDeployment(platform_id=platform.id, deployment_id=deployment_id)
    platform.deployments.append(deployment)
    session.flush()
    return deployment


def list_platforms(session: Session) -> list[LtiPlatform]:
    return list(session.scalars(select(LtiPlatform).order_by(LtiPlatform.id)))


def platform_urls(session: Session, issuer: str | None = None) -> list[str]:
    """The issuer and login URLs of the registered platforms (of ``issuer``'s only, if given): their origins may
    frame the LTI pages, as an LMS opens a launch in an iframe of its own."""
    query = select(LtiPlatform.issuer, LtiPlatform.auth_login_url).order_by(LtiPlatform.id)
    if issuer is not None:
        query = query.where(LtiPlatform.issuer == issuer)
    return [url for row in session.execute(query) for url in row]


def get_platform(session: Session, platform_id: int) -> LtiPlatform:
    platform = session.get(LtiPlatform, platform_id)
    if platform is None:
        raise NotFound(f"no LTI platform {platform_id}", field="platform_id")
    return platform


def platform_for(session: Session, issuer: str, client_id: str) -> LtiPlatform:
    platform = session.scalar(
        select(LtiPlatform).where(LtiPlatform.issuer == issuer, LtiPlatform.client_id == client_id)
    )
    if platform is None:
        raise NotFound(f"no LTI platform for issuer {issuer!r} and client id {client_id!r}")
    return platform


@dataclass(frozen=True)
class ToolValues:
    """What an LMS admin pastes into Canvas's developer key or Moodle's external tool form."""

    base_url: str
    login_initiation_url: str
    redirect_urls: list[str]
    target_link_uri: str
    deep_linking_url: str
    jwks_url: str
    domain: str
    scopes: list[str]


def tool_values(settings: Settings) -> ToolValues:
    base = settings.public_url.rstrip("/")
    launch = f"{base}/lti/launch"
    return ToolValues(
        base_url=base,
        login_initiation_url=f"{base}/lti/login",
        redirect_urls=[launch],
        target_link_uri=launch,
        deep_linking_url=launch,
        jwks_url=f"{base}/lti/jwks",
        domain=urlsplit(base).netloc,
        scopes=list(SCOPES),
    )
