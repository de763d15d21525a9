"""The small interface the rest of the app uses for LTI: login initiation and launch validation, as plain data in
and out. pylti1p3 is used only here and in adapters.py, so another library could take its place.

Every function here blocks (database, the platform's keyset over HTTP): call them from a worker thread.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pylti1p3.exception import LtiException, OIDCException
from pylti1p3.message_launch import MessageLaunch
from sqlalchemy.orm import Session, sessionmaker

from app.errors import DomainError
from app.lti.adapters import (
    CollectingCookies,
    CookieToSet,
    DatabaseToolConf,
    FastApiMessageLaunch,
    FastApiOIDCLogin,
    MalformedClaims,
    PlainRequest,
    SingleUseNonces,
)
from app.lti.keys import KeyStore
from app.lti.storage import DatabaseLaunchStorage

log = logging.getLogger(__name__)

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
NRPS_CLAIM = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL_CLAIM = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"


class LaunchRefused(DomainError):
    """A login initiation or launch that failed validation: shown as an error page, logged, nothing written."""

    status_code = 401
    type = "lti_launch_refused"


class LaunchMalformed(LaunchRefused):
    """A signed launch whose claims do not have the spec's shape (app.lti.claims): a 400, nothing written."""

    status_code = 400
    type = "lti_launch_malformed"


@dataclass(frozen=True)
class Launch:
    """A validated launch: the claims our provisioning reads, and the raw body for the services' URLs."""

    issuer: str
    client_id: str
    deployment_id: str
    message_type: str
    sub: str
    roles: list[str]
    email: str
    name: str
    context_id: str
    context_title: str
    context_label: str
    resource_link_id: str
    resource_link_title: str
    custom: dict[str, str]
    memberships_url: str | None
    lineitems_url: str | None
    lineitem_url: str | None
    ags_scopes: list[str]
    deep_linking: dict[str, Any] | None
    launch_id: str
    body: dict[str, Any] = field(repr=False)


@dataclass(frozen=True)
class LoginRedirect:
    url: str
    cookies: list[CookieToSet]


def _request(params: Mapping[str, str], cookies: Mapping[str, str], secure: bool) -> PlainRequest:
    return PlainRequest(params=dict(params), cookies=dict(cookies), secure=secure)


def login_redirect(
    factory: sessionmaker[Session], keys: KeyStore, *, params: Mapping[str, str], cookies: Mapping[str, str],
    secure: bool, launch_url: str,
) -> LoginRedirect:  # fmt: skip
    """Answer a platform's third-party login initiation: where to send the browser (the platform's auth URL)."""
    request = _request(params, cookies, secure)
    storage = DatabaseLaunchStorage(factory)
    storage.prune()
    cookie_service = CollectingCookies(request)
    login = FastApiOIDCLogin(
        request, DatabaseToolConf(factory, keys), SingleUseNonces(request, storage), cookie_service
    )
    try:
        url = login.get_redirect_object(launch_url).get_redirect_url()
    except (LtiException, OIDCException) as exc:
        log.warning("LTI login initiation refused: %s", exc, extra={"fields": {"event": "lti_login_refused"}})
        raise LaunchRefused(f"LTI login refused: {exc}") from exc
    return LoginRedirect(url=url, cookies=cookie_service.to_set)


def validate_launch(
    factory: sessionmaker[Session], keys: KeyStore, *, params: Mapping[str, str], cookies: Mapping[str, str],
    secure: bool, tool_url: str, leeway_s: float = 60.0,
) -> Launch:  # fmt: skip
    """Validate the id_token the platform posted (signature, iss, aud, nonce, state, exp, deployment, message,
    the claims' shapes, target_link_uri on ``tool_url``); ``leeway_s`` is how far the platform's clock may be off
    for iat, nbf and exp."""
    request = _request(params, cookies, secure)
    storage = DatabaseLaunchStorage(factory)
    launch = FastApiMessageLaunch(
        request, DatabaseToolConf(factory, keys), SingleUseNonces(request, storage), CollectingCookies(request)
    )
    launch.leeway_s, launch.tool_url = leeway_s, tool_url
    try:
        body: dict[str, Any] = dict(launch.validate().get_launch_data())
        launch_id, client_id = launch.get_launch_id(), launch.get_client_id()
    except MalformedClaims as exc:
        log.warning("LTI launch refused: %s", exc, extra={"fields": {"event": "lti_launch_refused"}})
        raise LaunchMalformed(f"LTI launch refused: {exc}") from exc
    except (LtiException, OIDCException) as exc:
        log.warning("LTI launch refused: %s", exc, extra={"fields": {"event": "lti_launch_refused"}})
        raise LaunchRefused(f"LTI launch refused: {exc}") from exc
    return claims_of(body, client_id, launch_id)


def launch_from_cache(
    factory: sessionmaker[Session], keys: KeyStore, launch_id: str
) -> MessageLaunch[Any, Any, Any, Any]:
    """pylti1p3's launch ``launch_id`` as its storage kept it at the launch (an hour at most); LtiException when
    it is over or unknown."""
    request = _request({}, {}, True)
    storage = DatabaseLaunchStorage(factory)
    return FastApiMessageLaunch.from_cache(
        launch_id, request, DatabaseToolConf(factory, keys), session_service=SingleUseNonces(request, storage),
        cookie_service=CollectingCookies(request),
    )  # fmt: skip


def cached_launch(factory: sessionmaker[Session], keys: KeyStore, launch_id: str) -> Launch:
    """A launch validated earlier in this browser's session, as pylti1p3's storage keeps it (an hour at most)."""
    try:
        cached = launch_from_cache(factory, keys, launch_id)
        body: dict[str, Any] = dict(cached.get_launch_data())
        client_id = cached.get_client_id()
    except LtiException as exc:
        raise LaunchRefused(f"this launch is over or unknown ({exc}); open the tool from the LMS again") from exc
    return claims_of(body, client_id, launch_id)


def claims_of(body: dict[str, Any], client_id: str, launch_id: str = "") -> Launch:
    """The plain launch of a validated body (app.lti.claims checked its shapes); ``client_id``: the registration's."""
    context = body.get(CLAIM + "context") or {}
    link = body.get(CLAIM + "resource_link") or {}
    nrps = body.get(NRPS_CLAIM) or {}
    ags = body.get(AGS_CLAIM) or {}
    name = body.get("name") or " ".join(p for p in (body.get("given_name"), body.get("family_name")) if p)
    return Launch(
        issuer=str(body["iss"]),
        client_id=client_id,
        deployment_id=str(body.get(CLAIM + "deployment_id") or ""),
        message_type=str(body.get(CLAIM + "message_type") or ""),
        sub=str(body["sub"]),
        roles=[str(r) for r in body.get(CLAIM + "roles") or []],
        email=str(body.get("email") or ""),
        name=str(name or ""),
        context_id=str(context.get("id") or ""),
        context_title=str(context.get("title") or ""),
        context_label=str(context.get("label") or ""),
        resource_link_id=str(link.get("id") or ""),
        resource_link_title=str(link.get("title") or ""),
        custom={str(k): "" if v is None else str(v) for k, v in (body.get(CLAIM + "custom") or {}).items()},
        memberships_url=nrps.get("context_memberships_url"),
        lineitems_url=ags.get("lineitems"),
        lineitem_url=ags.get("lineitem"),
        ags_scopes=[str(s) for s in ags.get("scope") or []],
        deep_linking=body.get(DL_CLAIM),
        launch_id=launch_id,
        body=body,
    )
