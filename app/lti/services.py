"""Calls to a platform's LTI Advantage services (AGS line items and scores, NRPS memberships) with an OAuth2
access token that pylti1p3's ServiceConnector obtains with our signed client assertion.

Blocking HTTP: call from a worker thread (the passback sender, a roster sync in a threadpool), never the event loop.
Answers come back as data with the status code and Retry-After, so the callers decide about retries.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

import requests
from pylti1p3.exception import LtiException
from pylti1p3.service_connector import ServiceConnector

from app.lti.adapters import DatabaseToolConf
from app.lti.models import LtiPlatform

TIMEOUT_S = 10.0
TOKEN_TTL_S = 3000.0  # platforms give an hour; we ask again before that
SCORE_TYPE = "application/vnd.ims.lis.v1.score+json"
LINEITEM_TYPE = "application/vnd.ims.lis.v2.lineitem+json"
LINEITEMS_TYPE = "application/vnd.ims.lis.v2.lineitemcontainer+json"
MEMBERS_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
SCOPE_LINEITEM = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
SCOPE_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
SCOPE_MEMBERS = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


class ServiceError(Exception):
    """A service call that did not succeed: the status (None: no answer), the platform's Retry-After, a message."""

    def __init__(self, message: str, status: int | None = None, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


@dataclass(frozen=True)
class Answer:
    status: int
    body: Any
    next_url: str | None


class _Tokens:
    """Access tokens per (platform, scopes), reused until shortly before they expire."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tokens: dict[tuple[int, tuple[str, ...]], tuple[float, str]] = {}

    def get(self, key: tuple[int, tuple[str, ...]]) -> str | None:
        with self._lock:
            found = self._tokens.get(key)
        return found[1] if found and time.monotonic() - found[0] < TOKEN_TTL_S else None

    def put(self, key: tuple[int, tuple[str, ...]], token: str) -> None:
        with self._lock:
            self._tokens[key] = (time.monotonic(), token)

    def drop(self, key: tuple[int, tuple[str, ...]]) -> None:
        with self._lock:
            self._tokens.pop(key, None)


TOKENS = _Tokens()


def scores_url(lineitem_url: str) -> str:
    """The line item's scores endpoint: '/scores' after its path, its query kept (Moodle's ?type_id=...)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


class PlatformClient:
    def __init__(self, platform: LtiPlatform, tool_conf: DatabaseToolConf) -> None:
        self.platform_id = platform.id
        self._http = requests.Session()
        self._http.headers["User-Agent"] = "autograder-lti/1"
        self._connector = ServiceConnector(tool_conf.registration(platform), self._http)

    def _token(self, scopes: tuple[str, ...]) -> str:
        key = (self.platform_id, scopes)
        token = TOKENS.get(key)
        if token is None:
            try:
                token = self._connector.get_access_token(list(scopes))
            except LtiException as exc:
                response = getattr(exc, "response", None)
                status = response.status_code if response is not None else None
                retry = response.headers.get("Retry-After") if response is not None else None
                raise ServiceError(f"the platform refused an access token: {str(exc)[:200]}", status, retry) from exc
            except requests.RequestException as exc:
                raise ServiceError(f"the platform's token endpoint did not answer: {type(exc).__name__}") from exc
            TOKENS.put(key, token)
        return token

    def request(
        self, method: str, url: str, scopes: tuple[str, ...], *, json_body: Any = None, content_type: str = "",
        accept: str = "application/json",
    ) -> Answer:  # fmt: skip
        resp = self._send(method, url, scopes, json_body, content_type, accept)
        if resp.status_code == 401:
            # Our cached token was revoked or expired early: ask for a new one, once.
            TOKENS.drop((self.platform_id, scopes))
            resp = self._send(method, url, scopes, json_body, content_type, accept)
        if not 200 <= resp.status_code < 300:
            raise ServiceError(
                f"{method} {url}: HTTP {resp.status_code} {resp.text[:200]}", resp.status_code,
                resp.headers.get("Retry-After"),
            )  # fmt: skip
        # requests parses Link headers (RFC 8288) without lowercasing the URL (pylti1p3's own parser does).
        next_url = resp.links.get("next", {}).get("url")
        return Answer(resp.status_code, resp.json() if resp.content else None, next_url)

    def _send(
        self, method: str, url: str, scopes: tuple[str, ...], json_body: Any, content_type: str, accept: str
    ) -> requests.Response:
        headers = {"Authorization": f"Bearer {self._token(scopes)}", "Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        try:
            return self._http.request(method, url, json=json_body, headers=headers, timeout=TIMEOUT_S)
        except requests.RequestException as exc:
            raise ServiceError(f"{method} {url} got no answer: {type(exc).__name__}") from exc

    def lineitems(self, lineitems_url: str, *, resource_link_id: str, max_pages: int = 50) -> list[dict[str, Any]]:
        """The container's line items of one resource link (AGS's ``resource_link_id`` filter), over all pages."""
        parts = urlsplit(lineitems_url)
        query = "&".join(q for q in (parts.query, urlencode({"resource_link_id": resource_link_id})) if q)
        url: str | None = urlunsplit(parts._replace(query=query))
        out: list[dict[str, Any]] = []
        for _ in range(max_pages):
            if url is None:
                return out
            answer = self.request("GET", url, (SCOPE_LINEITEM,), accept=LINEITEMS_TYPE)
            out.extend(i for i in (answer.body if isinstance(answer.body, list) else []) if isinstance(i, dict))
            url = answer.next_url
        raise ServiceError(f"the line item container has more than {max_pages} pages; stopped")

    def create_lineitem(
        self, lineitems_url: str, *, label: str, score_maximum: float, resource_link_id: str, tag: str = ""
    ) -> str:
        body: dict[str, Any] = {"label": label, "scoreMaximum": score_maximum, "resourceLinkId": resource_link_id}
        if tag:
            body["tag"] = tag
        answer = self.request(
            "POST", lineitems_url, (SCOPE_LINEITEM,), json_body=body, content_type=LINEITEM_TYPE, accept=LINEITEM_TYPE
        )
        if not isinstance(answer.body, dict) or not answer.body.get("id"):
            raise ServiceError("the platform created a line item without an id")
        return str(answer.body["id"])

    def post_score(self, lineitem_url: str, score: dict[str, Any]) -> int:
        return self.request("POST", scores_url(lineitem_url), (SCOPE_SCORE,), json_body=score,
                            content_type=SCORE_TYPE).status  # fmt: skip

    def members(self, memberships_url: str, *, max_pages: int = 200) -> list[dict[str, Any]]:
        """Every member over all pages (Link: rel="next")."""
        out: list[dict[str, Any]] = []
        url: str | None = memberships_url
        for _ in range(max_pages):
            if url is None:
                return out
            answer = self.request("GET", url, (SCOPE_MEMBERS,), accept=MEMBERS_TYPE)
            members = answer.body.get("members", []) if isinstance(answer.body, dict) else []
            out.extend(m for m in members if isinstance(m, dict))
            url = answer.next_url
        raise ServiceError(f"the roster has more than {max_pages} pages; stopped")

    def close(self) -> None:
        self._http.close()
