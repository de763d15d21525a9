"""LTI registration API: admins register platforms; staff read the values to paste into their LMS."""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter

from app.deps import InstructorUser, PrincipalDep, SessionDep, SettingsDep
from app.error_format import error_responses
from app.errors import Forbidden
from app.lti import registration
from app.lti.models import LtiPlatform
from app.lti.schemas import PlatformCreate, PlatformPublic, ToolValuesPublic

router = APIRouter(prefix="/lti", tags=["lti"])


def _public(platform: LtiPlatform) -> PlatformPublic:
    return PlatformPublic(
        id=platform.id, name=platform.name, issuer=platform.issuer, client_id=platform.client_id,
        deployment_ids=[d.deployment_id for d in platform.deployments], auth_login_url=platform.auth_login_url,
        auth_token_url=platform.auth_token_url, keyset_url=platform.keyset_url, auth_audience=platform.auth_audience,
        created_at=platform.created_at,
    )  # fmt: skip


@router.get("/tool", response_model=ToolValuesPublic, responses=error_responses(403))
def tool_values(user: InstructorUser, settings: SettingsDep) -> ToolValuesPublic:
    """The URLs and scopes to paste into Canvas or Moodle (staff)."""
    return ToolValuesPublic(**asdict(registration.tool_values(settings)))


@router.get("/platforms", response_model=list[PlatformPublic], responses=error_responses(403))
def list_platforms(principal: PrincipalDep, session: SessionDep) -> list[PlatformPublic]:
    """Registered platforms (admins)."""
    if not principal.user.is_admin:
        raise Forbidden("only admins manage LTI platforms")
    return [_public(p) for p in registration.list_platforms(session)]


@router.post("/platforms", response_model=PlatformPublic, status_code=201, responses=error_responses(403, 409, 422))
def register_platform(
    body: PlatformCreate, principal: PrincipalDep, session: SessionDep, settings: SettingsDep
) -> PlatformPublic:
    """Register an LMS (issuer, client id, deployments, its endpoints; https URLs) (admins)."""
    if not principal.user.is_admin:
        raise Forbidden("only admins manage LTI platforms")
    platform = registration.register_platform(session, **body.model_dump(), allow_http=settings.lti_allow_http)
    return _public(platform)
