"""pylti1p3's framework adapters for FastAPI: request, cookies, session service, redirect, tool configuration.

pylti1p3 ships Django and Flask adapters only. These hold plain data (the request's parameters and cookies are
read once, before the library runs in a worker thread), so nothing here touches the event loop.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import jwt
import requests
from pylti1p3.cookie import CookieService
from pylti1p3.deployment import Deployment
from pylti1p3.exception import LtiException
from pylti1p3.message_launch import MessageLaunch
from pylti1p3.oidc_login import OIDCLogin
from pylti1p3.redirect import Redirect
from pylti1p3.registration import Registration
from pylti1p3.request import Request
from pylti1p3.session import SessionService
from pylti1p3.tool_config.abstract import ToolConfAbstract
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from app.lti import claims
from app.lti.keys import KeyStore
from app.lti.models import LtiDeployment, LtiPlatform
from app.lti.storage import DatabaseLaunchStorage

JWKS_TTL_S = 3600.0
# A token with a kid we do not know refetches the keyset at most this often per URL: anyone who gets a nonce from
# /lti/login could otherwise make every launch they post fetch the platform's keyset (a request each, 10 s each).
JWKS_MIN_REFRESH_S = 60.0
HTTP_TIMEOUT_S = 10.0


@dataclass
class PlainRequest(Request):
    """The parts of an HTTP request pylti1p3 reads: parameters (query and form), cookies, whether it came over TLS."""

    params: Mapping[str, str]
    cookies: Mapping[str, str]
    secure: bool
    _session: dict[str, Any] = field(default_factory=dict)

    @property
    def session(self) -> dict[str, Any]:
        return self._session

    def is_secure(self) -> bool:
        return self.secure

    def get_param(self, key: str) -> str:
        return self.params.get(key) or ""

    def get_cookie(self, key: str) -> str | None:
        return self.cookies.get(key)


@dataclass(frozen=True)
class CookieToSet:
    name: str
    value: str
    max_age: int | None
    secure: bool


class CollectingCookies(CookieService):
    """Reads the request's cookies; the cookies pylti1p3 sets are collected and put on our response afterwards."""

    def __init__(self, request: PlainRequest) -> None:
        self._request = request
        self.to_set: list[CookieToSet] = []

    def _key(self, name: str) -> str:
        return f"{self._cookie_prefix}-{name}"

    def get_cookie(self, name: str) -> str | None:
        return self._request.get_cookie(self._key(name))

    def set_cookie(self, name: str, value: str | int, exp: int | None = 3600) -> None:
        self.to_set.append(CookieToSet(self._key(name), str(value), exp, self._request.is_secure()))


class SingleUseNonces(SessionService):
    """pylti1p3 only asks whether a nonce was issued; here asking consumes it, so an id_token works once."""

    # Nonces, states and validated launches (personal data: the id_token's claims) live an hour, not pylti1p3's day:
    # long enough to answer a deep link, and pruned at every login after that.
    _launch_data_lifetime = 3600

    def __init__(self, request: PlainRequest, storage: DatabaseLaunchStorage) -> None:
        super().__init__(request)
        self.set_data_storage(storage)
        self._storage = storage

    def check_nonce(self, nonce: str) -> bool:
        return self._storage.consume(self._get_key("nonce", nonce))


class UrlRedirect(Redirect[str]):
    """The library builds the platform's auth URL; our router turns it into a 302 with the collected cookies."""

    def __init__(self, location: str) -> None:
        self._location = location

    def do_redirect(self) -> str:
        return self._location

    def do_js_redirect(self) -> str:
        return self._location

    def set_redirect_url(self, location: str) -> None:
        self._location = location

    def get_redirect_url(self) -> str:
        return self._location


class DatabaseToolConf(ToolConfAbstract[PlainRequest]):
    """Registrations from the lti_platform table, signed with the data dir's current tool key."""

    def __init__(self, session_factory: sessionmaker[Session], keys: KeyStore) -> None:
        self._factory, self._keys = session_factory, keys

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def _platform(self, session: Session, iss: str, client_id: str | None) -> LtiPlatform | None:
        rows = list(session.scalars(select(LtiPlatform).where(LtiPlatform.issuer == iss)))
        if client_id:
            rows = [p for p in rows if p.client_id == client_id]
        return rows[0] if len(rows) == 1 else None  # no client id and several registrations: ambiguous

    def registration(self, platform: LtiPlatform) -> Registration:
        key = self._keys.current()
        reg = Registration()
        reg.set_issuer(platform.issuer).set_client_id(platform.client_id).set_key_set_url(platform.keyset_url)
        reg.set_auth_login_url(platform.auth_login_url).set_auth_token_url(platform.auth_token_url)
        if platform.auth_audience:
            reg.set_auth_audience(platform.auth_audience)
        reg.set_tool_private_key(key.private_pem).set_tool_public_key(key.public_pem)
        return reg

    def find_registration_by_issuer(self, iss: str, *args: Any, **kwargs: Any) -> Registration:
        raise LtiException("registrations are looked up by issuer and client id")

    def find_registration_by_params(self, iss: str, client_id: str, *args: Any, **kwargs: Any) -> Registration:
        with self._factory() as session:
            platform = self._platform(session, iss, client_id)
            return self.registration(platform) if platform is not None else None  # type: ignore[return-value]

    def find_deployment(self, iss: str, deployment_id: str) -> Deployment | None:
        return None

    def find_deployment_by_params(
        self, iss: str, deployment_id: str, client_id: str, *args: Any, **kwargs: Any
    ) -> Deployment | None:
        with self._factory() as session:
            platform = self._platform(session, iss, client_id)
            if platform is None:
                return None
            found = session.scalar(
                select(LtiDeployment.id).where(
                    LtiDeployment.platform_id == platform.id, LtiDeployment.deployment_id == deployment_id
                )
            )
            return Deployment().set_deployment_id(deployment_id) if found is not None else None


class FastApiOIDCLogin(OIDCLogin[PlainRequest, DatabaseToolConf, SingleUseNonces, CollectingCookies, str]):
    def get_redirect(self, url: str) -> Redirect[str]:
        return UrlRedirect(url)


class _JwksCache:
    """Platforms' keysets by URL, kept an hour; a token signed with a kid we have not seen refetches once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sets: dict[str, tuple[float, dict[str, Any]]] = {}

    def get(self, url: str, http: requests.Session, *, refresh: bool = False) -> dict[str, Any]:
        with self._lock:
            cached = self._sets.get(url)
        if cached is not None:
            age = time.monotonic() - cached[0]
            if age < (JWKS_MIN_REFRESH_S if refresh else JWKS_TTL_S):
                return cached[1]
        try:
            resp = http.get(url, timeout=HTTP_TIMEOUT_S)
            resp.raise_for_status()
            keyset = resp.json()
        except (requests.RequestException, ValueError) as exc:
            raise LtiException(f"the platform's keyset could not be fetched from {url}: {type(exc).__name__}") from exc
        if not isinstance(keyset, dict) or not isinstance(keyset.get("keys"), list):
            raise LtiException(f"the platform's keyset at {url} is not a JWKS")
        with self._lock:
            self._sets[url] = (time.monotonic(), keyset)
        return keyset

    def backdate(self, seconds: float) -> None:
        """Make every cached keyset older by ``seconds`` (tests: time passing without waiting for it)."""
        with self._lock:
            self._sets = {url: (at - seconds, keyset) for url, (at, keyset) in self._sets.items()}

    def clear(self) -> None:
        with self._lock:
            self._sets.clear()


JWKS_CACHE = _JwksCache()


class MalformedClaims(LtiException):
    """The id_token is genuine, but its claims do not have the spec's shape (app.lti.claims)."""


class FastApiMessageLaunch(MessageLaunch[PlainRequest, DatabaseToolConf, SingleUseNonces, CollectingCookies]):
    """pylti1p3's launch validation with what it leaves out: exp and iat required, the registration found by the
    audience (``azp`` when there are several), the claims' shapes and target_link_uri (app.lti.claims), the keyset
    cached and refetched on an unknown kid, and a leeway for the platform's clock (``leeway_s``,
    AUTOGRADER_LTI_CLOCK_LEEWAY_S)."""

    leeway_s: float = 60.0
    tool_url: str = ""  # AUTOGRADER_PUBLIC_URL: target_link_uri must be on it

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # PyJWT takes a list under "require"; pylti1p3 types the options as booleans only.
        self.set_jwt_verify_options({"verify_aud": False, "require": ["exp", "iat"]})  # type: ignore[dict-item]

    def validate_jwt_signature(self) -> FastApiMessageLaunch:
        # pylti1p3's own check passes no leeway to PyJWT, so an LMS whose clock runs 2 s fast had its launches
        # refused now and then ("not yet valid"); the same happened to a token 1 s past its exp. PyJWT applies
        # the leeway to exp, nbf and iat alike.
        public_key, key_alg = self.get_public_key()
        try:
            jwt.decode(
                self._get_id_token(), public_key, algorithms=[key_alg],
                options=self._jwt_verify_options,  # type: ignore[arg-type]
                leeway=self.leeway_s,
            )  # fmt: skip
        except jwt.InvalidTokenError as exc:
            raise LtiException(f"Can't decode id_token: {exc}") from exc
        return self

    def _get_request_param(self, key: str) -> str:
        return self._request.get_param(key)

    def get_client_id(self) -> str:
        """The client id the id_token is for: its only audience, or (several) its ``azp``, which must be among
        them. pylti1p3 takes ``aud[0]``, which refused a token listing our client id second."""
        body = self._get_jwt_body()
        aud = body.get("aud")
        audiences = aud if isinstance(aud, list) else [aud]
        if not audiences or not all(isinstance(a, str) and a for a in audiences):
            raise LtiException("the id_token's aud must be a string or an array of strings")
        azp = body.get("azp")
        if len(audiences) == 1:
            return str(audiences[0])
        if not isinstance(azp, str) or azp not in audiences:
            raise LtiException("the id_token has several audiences and no azp among them")
        return azp

    def validate_registration(self) -> FastApiMessageLaunch:
        super().validate_registration()  # found by (iss, get_client_id())
        body = self._get_jwt_body()
        client_id = self._registration.get_client_id() if self._registration else None
        aud = body.get("aud")
        if client_id not in (aud if isinstance(aud, list) else [aud]):
            raise LtiException("the id_token is not addressed to this tool (aud)")
        # OpenID Connect Core 3.1.3.7: an azp, when present, is the client id (also with a single audience).
        if "azp" in body and body.get("azp") != client_id:
            raise LtiException("the id_token's azp is not this tool")
        return self

    def validate_message(self) -> FastApiMessageLaunch:
        # The claims' types first: pylti1p3's validators call .get() on whatever the claims hold.
        try:
            claims.check(dict(self._get_jwt_body()), tool_url=self.tool_url)
        except claims.ClaimError as exc:
            raise MalformedClaims(str(exc)) from exc
        super().validate_message()
        return self

    def fetch_public_key(self, key_set_url: str) -> Any:
        return JWKS_CACHE.get(key_set_url, self._requests_session)

    def get_public_key(self) -> tuple[str, str]:
        try:
            return super().get_public_key()
        except LtiException as exc:
            if "Unable to find public key" not in str(exc) or self._registration is None:
                raise
        # The platform may have rotated its key since we cached its keyset: fetch it again, once.
        url = self._registration.get_key_set_url() or ""
        self._registration.set_key_set(JWKS_CACHE.get(url, self._requests_session, refresh=True))  # type: ignore[arg-type]
        return super().get_public_key()


def keyset_json(keys: KeyStore) -> str:
    return json.dumps(keys.jwks())
