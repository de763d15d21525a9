"""A test LMS: a real HTTP server on 127.0.0.1 speaking LTI 1.3's platform side, shaped like Canvas and Moodle.

It has its own RSA key and JWKS; an OIDC auth endpoint that receives our tool's login redirect, checks the client
id and the redirect URI, and answers with the auto-posting form carrying a signed id_token; an OAuth2
client-credentials token endpoint that verifies our tool's signed JWT assertion against the tool's JWKS; AGS line
items and scores; NRPS memberships with Link-header paging; a deep-linking return that verifies our response.
Tests script it (the launch to send, failures to answer) and read back what it received.
"""

from __future__ import annotations

import html
import json
import re
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from jwcrypto.jwk import JWK

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
ROLE = "http://purl.imsglobal.org/vocab/lis/v2/membership#"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"


@dataclass
class PendingLaunch:
    """What the platform sends for the next login with this login_hint: claims, and how to spoil them."""

    claims: dict[str, Any]
    # "signature", "expired", "audience", "azp", "issuer", "deployment", "version"; "no-azp" (the claim left out)
    tamper: str = ""


@dataclass
class TestPlatform:
    """Shared by the tests of a module; ``reset()`` between tests."""

    client_id: str = "10000000000001"
    deployment_id: str = "1:abc"
    issuer: str = ""
    redirect_uris: list[str] = field(default_factory=list)
    tool_jwks: dict[str, Any] = field(default_factory=dict)  # pasted in, as Canvas's "Public JWK" field takes it
    base_url: str = ""
    # The LMS page framing the tool (/course): "_parent" offers LTI platform storage (lti.put_data/get_data) from
    # that page, named in the login initiation and the launch as lti_storage_target; "" offers none.
    storage_target: str = ""
    auto_post: bool = False  # the auth page's form posts itself (a script); the tests without a browser post it

    def __post_init__(self) -> None:
        self.key = JWK.generate(kty="RSA", size=2048)
        self.kid = self.key.thumbprint()
        self.old_keys: list[JWK] = []
        self.launches: dict[str, PendingLaunch] = {}
        self.lineitems: dict[str, dict[str, Any]] = {}
        self.scores: dict[str, list[dict[str, Any]]] = {}
        self.score_failures: list[tuple[int, dict[str, str]]] = []  # answered before any score is accepted
        self.members: list[dict[str, Any]] = []
        self.members_failures: list[int] = []  # statuses answered to membership requests before any roster
        self.page_size = 2
        self.tokens: dict[str, set[str]] = {}
        self.assertions: list[dict[str, Any]] = []
        self.deep_link_responses: list[dict[str, Any]] = []
        self.lineitem_posts = 0  # line items created through POST /lineitems
        self.container_gets = 0  # GET /lineitems (the container, AGS section 3.2)
        # Set: a GET of the container waits on it (after setting container_reached), so a test holds one
        # sender inside its lookup while another runs.
        self.container_gate: threading.Event | None = None
        self.container_reached = threading.Event()
        self.lock = threading.Lock()

    def reset(self) -> None:
        with self.lock:
            self.launches.clear()
            self.lineitems.clear()
            self.scores.clear()
            self.score_failures.clear()
            self.members.clear()
            self.members_failures.clear()
            self.tokens.clear()
            self.assertions.clear()
            self.deep_link_responses.clear()
            self.lineitem_posts = self.container_gets = 0
            self.container_gate = None
            self.container_reached.clear()

    # --- keys ------------------------------------------------------------------------------------------------

    def jwks(self) -> dict[str, Any]:
        keys = []
        for key in [self.key, *self.old_keys]:
            public = json.loads(key.export_public())
            public.update(kid=key.thumbprint(), alg="RS256", use="sig")
            keys.append(public)
        return {"keys": keys}

    def rotate(self) -> None:
        self.old_keys.append(self.key)
        self.key = JWK.generate(kty="RSA", size=2048)
        self.kid = self.key.thumbprint()

    def sign(self, claims: dict[str, Any]) -> str:
        pem = self.key.export_to_pem(private_key=True, password=None)
        return jwt.encode(claims, pem, algorithm="RS256", headers={"kid": self.kid})

    def verify_tool_jwt(self, token: str, audience: str) -> dict[str, Any]:
        kid = jwt.get_unverified_header(token).get("kid")
        for key in self.tool_jwks.get("keys", []):
            if key.get("kid") == kid:
                pem = JWK(**key).export_to_pem()
                return dict(jwt.decode(token, pem, algorithms=["RS256"], audience=audience))
        raise jwt.InvalidTokenError(f"unknown tool key {kid!r}")

    # --- launches ----------------------------------------------------------------------------------------------

    def expect_launch(self, claims: dict[str, Any], tamper: str = "") -> str:
        """Queue a launch; returns the login_hint the tool's login initiation must carry."""
        hint = "hint-" + secrets.token_hex(6)
        self.launches[hint] = PendingLaunch(claims, tamper)
        return hint

    def id_token(self, pending: PendingLaunch, nonce: str) -> str:
        now = int(time.time())
        claims = {
            "iss": self.issuer, "aud": self.client_id, "azp": self.client_id, "iat": now - 5, "exp": now + 300,
            "nonce": nonce, LTI + "deployment_id": self.deployment_id, LTI + "version": "1.3.0",
            **pending.claims,
        }  # fmt: skip
        tamper = pending.tamper
        if tamper == "expired":
            claims["iat"], claims["exp"] = now - 7200, now - 3600
        elif tamper == "audience":
            claims["aud"] = claims["azp"] = "some-other-tool"
        elif tamper == "azp":  # addressed to us and another tool, authorised for the other one
            claims["aud"], claims["azp"] = [self.client_id, "some-other-tool"], "some-other-tool"
        elif tamper == "issuer":
            claims["iss"] = "https://evil.example"
        elif tamper == "deployment":
            claims[LTI + "deployment_id"] = "9:unknown"
        elif tamper == "version":
            claims[LTI + "version"] = "1.1"
        elif tamper == "no-azp":
            claims.pop("azp", None)
        token = self.sign(claims)
        if tamper == "signature":
            head, _, sig = token.split(".")
            claims[LTI + "roles"] = [ROLE + "Instructor"]
            forged = jwt.utils.base64url_encode(json.dumps(claims).encode()).decode()
            token = f"{head}.{forged}.{sig}"
        return token

    # --- helpers for the tests -----------------------------------------------------------------------------------

    def add_lineitem(self, label: str, score_maximum: float, resource_link_id: str = "", tag: str = "") -> str:
        item_id = uuid.uuid4().hex[:8]
        url = f"{self.base_url}/lineitems/{item_id}"
        self.lineitems[item_id] = {
            "id": url, "label": label, "scoreMaximum": score_maximum, "resourceLinkId": resource_link_id,
            **({"tag": tag} if tag else {}),
        }  # fmt: skip
        return url


def canvas_claims(
    platform: TestPlatform, *, sub: str, role: str, link: str, context: str = "4dde05e8ca1973bcca9bffc13e15488",
    email: str = "", name: str = "", custom: dict[str, str] | None = None, lineitem: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """An LtiResourceLinkRequest as Canvas sends it (hashed context id, institution roles besides the context's)."""
    base = platform.base_url
    return {
        "sub": sub, "email": email, "name": name, "given_name": name.split(" ")[0], "family_name": name.split(" ")[-1],
        LTI + "message_type": "LtiResourceLinkRequest",
        LTI + "target_link_uri": platform.redirect_uris[0],
        LTI + "resource_link": {"id": link, "title": "Homework 1", "description": None},
        LTI + "roles": [ROLE + role, "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"],
        LTI + "context": {"id": context, "label": "ATT101", "title": "Attention and Transformers",
                          "type": ["http://purl.imsglobal.org/vocab/lis/v2/course#CourseOffering"]},
        LTI + "tool_platform": {"guid": "canvas-guid", "name": "Test Canvas", "product_family_code": "canvas",
                                "version": "cloud"},
        LTI + "custom": custom or {},
        LTI + "lis": {"person_sourcedid": f"sis-{sub[:6]}", "course_offering_sourcedid": "ATT101-2027"},
        "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
            "scope": [LINEITEM_SCOPE, SCORE_SCOPE], "lineitems": f"{base}/lineitems",
            **({"lineitem": lineitem} if lineitem else {}),
        },
        "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
            "context_memberships_url": f"{base}/memberships", "service_versions": ["2.0"],
        },
        "https://www.instructure.com/placement": "assignment_selection",
    }  # fmt: skip


def moodle_claims(
    platform: TestPlatform, *, sub: str, role: str, link: str, context: str = "2", email: str = "", name: str = "",
    custom: dict[str, str] | None = None, lineitem: str | None = None,
) -> dict[str, Any]:  # fmt: skip
    """An LtiResourceLinkRequest as Moodle 4 sends it (numeric ids, ext claim, context roles only)."""
    base = platform.base_url
    return {
        "sub": sub, "email": email, "name": name, "given_name": name.split(" ")[0], "family_name": name.split(" ")[-1],
        LTI + "message_type": "LtiResourceLinkRequest",
        LTI + "target_link_uri": platform.redirect_uris[0],
        LTI + "resource_link": {"id": link, "title": "Quiz"},
        LTI + "roles": [ROLE + role],
        LTI + "context": {"id": context, "label": "ATT", "title": "Attention",
                          "type": ["CourseSection"]},
        LTI + "tool_platform": {"product_family_code": "moodle", "version": "2024100700", "guid": "moodle.test",
                                "name": "Moodle"},
        LTI + "launch_presentation": {"locale": "en", "document_target": "iframe", "return_url": f"{base}/return"},
        LTI + "custom": custom or {},
        "https://purl.imsglobal.org/spec/lti/claim/ext": {"user_username": sub, "lms": "moodle-2"},
        "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint": {
            "scope": [LINEITEM_SCOPE, SCORE_SCOPE], "lineitems": f"{base}/lineitems?type_id=1",
            **({"lineitem": lineitem} if lineitem else {}),
        },
        "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
            "context_memberships_url": f"{base}/memberships", "service_versions": ["1.0", "2.0"],
        },
    }  # fmt: skip


_STORAGE_SCRIPT = """<script>
var stored = {};
window.addEventListener("message", function (e) {
  var m = e.data;
  if (!m || typeof m !== "object" || (m.subject !== "lti.put_data" && m.subject !== "lti.get_data")) return;
  var mine = stored[e.origin] = stored[e.origin] || {};
  var answer = {subject: m.subject + ".response", message_id: m.message_id, key: m.key};
  if (m.subject === "lti.put_data") { mine[m.key] = m.value; answer.value = m.value; }
  else if (m.key in mine) { answer.value = mine[m.key]; }
  else { answer.error = {code: "bad_request", message: "no such key"}; }
  e.source.postMessage(answer, e.origin);
});
</script>"""


class _Handler(BaseHTTPRequestHandler):
    platform: TestPlatform

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, status: int, body: Any, headers: dict[str, str] | None = None, ctype: str = "application/json"
    ) -> None:
        data = (body if isinstance(body, str) else json.dumps(body)).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def _form(self) -> dict[str, str]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode()
        return {k: v[0] for k, v in parse_qs(raw).items()}

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"null")

    def _scopes(self) -> set[str] | None:
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip()
        return self.platform.tokens.get(token)

    def do_GET(self) -> None:
        p = self.platform
        url = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        if url.path == "/jwks":
            return self._send(200, p.jwks())
        if url.path == "/auth":
            return self._auth(query)
        if url.path == "/course":
            return self._course(query)
        if url.path == "/memberships":
            if NRPS_SCOPE not in (self._scopes() or set()):
                return self._send(401, {"error": "invalid token"})
            with p.lock:
                failure = p.members_failures.pop(0) if p.members_failures else None
            if failure is not None:
                return self._send(failure, {"error": "try later"})
            page = int(query.get("page", "1"))
            start = (page - 1) * p.page_size
            chunk = p.members[start : start + p.page_size]
            headers = {}
            if start + p.page_size < len(p.members):
                headers["Link"] = f'<{p.base_url}/memberships?page={page + 1}>; rel="next"'
            # The context id here is Canvas's/Moodle's own, not necessarily the launch's: the tool must not compare.
            body = {"id": f"{p.base_url}/memberships", "context": {"id": "ctx-as-nrps-writes-it"}, "members": chunk}
            return self._send(200, body, headers, "application/vnd.ims.lti-nrps.v2.membershipcontainer+json")
        if url.path == "/lineitems":
            if not (self._scopes() or set()) & {LINEITEM_SCOPE}:
                return self._send(401, {"error": "invalid token"})
            with p.lock:
                p.container_gets += 1
            gate = p.container_gate
            if gate is not None:
                p.container_reached.set()
                gate.wait(30)
            items = list(p.lineitems.values())
            # AGS 2.0 section 3.2.4: the container filtered by resource_link_id, resource_id and tag.
            if "resource_link_id" in query:
                items = [i for i in items if i["resourceLinkId"] == query["resource_link_id"]]
            if "tag" in query:
                items = [i for i in items if i.get("tag") == query["tag"]]
            return self._send(200, items, ctype="application/vnd.ims.lis.v2.lineitemcontainer+json")
        return self._send(404, {"error": "not found"})

    def _auth(self, q: dict[str, str]) -> None:
        p = self.platform
        if q.get("client_id") != p.client_id:
            return self._send(400, "unknown client_id", ctype="text/plain")
        if q.get("redirect_uri") not in p.redirect_uris:
            return self._send(400, "redirect_uri not registered", ctype="text/plain")
        if q.get("response_type") != "id_token" or q.get("scope") != "openid" or q.get("response_mode") != "form_post":
            return self._send(400, "not an OIDC implicit form_post request", ctype="text/plain")
        pending = p.launches.pop(q.get("login_hint", ""), None)
        if pending is None:
            return self._send(400, "unknown login_hint", ctype="text/plain")
        token = p.id_token(pending, q["nonce"])
        target = (
            f'<input type="hidden" name="lti_storage_target" value="{html.escape(p.storage_target)}">'
            if p.storage_target
            else ""
        )
        page = (
            f'<form id="f" method="post" action="{html.escape(q["redirect_uri"])}">'
            f'<input type="hidden" name="id_token" value="{html.escape(token)}">'
            f'<input type="hidden" name="state" value="{html.escape(q["state"])}">{target}</form>'
        )
        if p.auto_post:  # the launch posts itself, as Canvas's and Moodle's do
            page += "<script>document.getElementById('f').submit()</script>"
        return self._send(200, page, ctype="text/html")

    def _course(self, q: dict[str, str]) -> None:
        """An LMS course page with the tool in an iframe (its src: the login initiation), answering platform
        storage messages when ``storage_target`` is set: kept per tool origin, in the page, as the spec says."""
        storage = "" if not self.platform.storage_target else _STORAGE_SCRIPT
        page = (
            "<!doctype html><html lang=en><title>LMS course</title><h1>LMS course</h1>"
            f'<iframe name="tool" title="The tool" width="1100" height="900" src="{html.escape(q["src"])}"></iframe>'
            f"{storage}"
        )
        return self._send(200, page, ctype="text/html")

    def do_POST(self) -> None:
        p = self.platform
        url = urlsplit(self.path)
        if url.path == "/token":
            return self._token(self._form())
        m = re.fullmatch(r"/lineitems/(\w+)/scores", url.path)
        if m:
            if SCORE_SCOPE not in (self._scopes() or set()):
                return self._send(401, {"error": "invalid token"})
            if self.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
                return self._send(415, {"error": "score media type expected"})
            body = self._body()
            with p.lock:
                if p.score_failures:
                    status, headers = p.score_failures.pop(0)
                    return self._send(status, {"error": "try later"}, headers)
                p.scores.setdefault(m.group(1), []).append(body)
            return self._send(200, {})
        if url.path == "/lineitems":
            if LINEITEM_SCOPE not in (self._scopes() or set()):
                return self._send(401, {"error": "invalid token"})
            body = self._body()
            with p.lock:
                p.lineitem_posts += 1
                item = p.add_lineitem(
                    body.get("label", ""), body["scoreMaximum"], body.get("resourceLinkId", ""), body.get("tag", "")
                )
            return self._send(201, p.lineitems[item.rsplit("/", 1)[1]])
        if url.path == "/deep_link_return":
            form = self._form()
            try:
                claims = p.verify_tool_jwt(form["JWT"], audience=p.issuer)
            except (KeyError, jwt.InvalidTokenError) as exc:
                return self._send(400, f"deep linking response refused: {exc}", ctype="text/plain")
            p.deep_link_responses.append(claims)
            return self._send(200, "<p>Content added</p>", ctype="text/html")
        return self._send(404, {"error": "not found"})

    def _token(self, form: dict[str, str]) -> None:
        p = self.platform
        if form.get("grant_type") != "client_credentials":
            return self._send(400, {"error": "unsupported_grant_type"})
        if form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            return self._send(400, {"error": "invalid_request"})
        try:
            claims = p.verify_tool_jwt(form.get("client_assertion", ""), audience=f"{p.base_url}/token")
        except jwt.InvalidTokenError as exc:
            return self._send(401, {"error": "invalid_client", "error_description": str(exc)})
        if claims.get("iss") != p.client_id or claims.get("sub") != p.client_id:
            return self._send(401, {"error": "invalid_client"})
        p.assertions.append(claims)
        token = secrets.token_urlsafe(16)
        p.tokens[token] = set(form.get("scope", "").split())
        return self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                                "scope": form.get("scope", "")})  # fmt: skip


class PlatformServer:
    """Serves a TestPlatform on 127.0.0.1 (a free port) in a thread; ``host_name`` is the name its URLs use
    (``localhost``: another site than a tool on 127.0.0.1, for a cross-site iframe)."""

    def __init__(self, platform: TestPlatform, host_name: str = "") -> None:
        handler = type("Handler", (_Handler,), {"platform": platform})
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        host, port = self.httpd.server_address[:2]
        platform.base_url = f"http://{host_name or host}:{port}"
        platform.issuer = platform.issuer or platform.base_url
        self.platform = platform
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> TestPlatform:
        self.thread.start()
        return self.platform

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def deep_link_claims(platform: TestPlatform, *, sub: str, role: str, context: str = "ctx-dl") -> dict[str, Any]:
    """An LtiDeepLinkingRequest as Canvas sends it from an assignment's "external tool" picker."""
    return {
        "sub": sub, "name": "Ada Prof", LTI + "message_type": "LtiDeepLinkingRequest",
        LTI + "target_link_uri": platform.redirect_uris[0], LTI + "roles": [ROLE + role],
        LTI + "context": {"id": context, "label": "ATT101", "title": "Attention and Transformers"},
        "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings": {
            "deep_link_return_url": f"{platform.base_url}/deep_link_return",
            "accept_types": ["ltiResourceLink"], "accept_presentation_document_targets": ["iframe", "window"],
            "accept_multiple": False, "data": "platform-opaque-data",
        },
    }  # fmt: skip
