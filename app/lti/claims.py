"""The shape of a launch's claims, checked by the LTI Core 1.3 specification before anything reads them.

pylti1p3 checks the message type, the version, `sub`, the resource link id and the deep-linking settings, but it
reads the claims as it finds them: a `context` or `custom` sent as a string broke the launch with a 500, a `roles`
string was read as a list of characters. Here every claim our provisioning reads has the JSON type the spec gives
it, or the launch is refused (``ClaimError``, a 400 with nothing written). Checked after the signature, so only a
registered platform (or a bug in one) gets this far.

What is checked (LTI Core 1.3 section 5, AGS 2.0 and NRPS 2.0 for their claims):

- `sub`: a non-empty string (at most 255 characters, the spec's limit);
- `roles`: required, an array of strings (it may be empty: "no role");
- `context`, `resource_link`, `tool_platform`, `launch_presentation`, `lis`, the AGS endpoint, the NRPS claim, the
  deep-linking settings: JSON objects when present; the ids they carry strings;
- `custom`: a JSON object whose values are strings (numbers and booleans are read as their text, as some platforms
  send them, and null as empty; an object or array as a value is refused);
- `target_link_uri`: required, and on this tool (same scheme, host and port as AUTOGRADER_PUBLIC_URL, under its
  path): a token minted for another tool's launch is not ours to act on;
- the audience (`aud`, `azp`) is checked where the registration is looked up (adapters.FastApiMessageLaunch).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
NRPS = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"

OBJECTS = {
    CLAIM + "context": ("id", "label", "title"),
    CLAIM + "resource_link": ("id", "title"),
    CLAIM + "tool_platform": ("guid", "name", "product_family_code", "version"),
    CLAIM + "launch_presentation": ("document_target", "return_url", "locale"),
    CLAIM + "lis": ("person_sourcedid", "course_offering_sourcedid", "course_section_sourcedid"),
    AGS: ("lineitems", "lineitem"),
    NRPS: ("context_memberships_url",),
    DL: ("deep_link_return_url",),
}
STRINGS = ("email", "name", "given_name", "family_name", CLAIM + "deployment_id", CLAIM + "message_type")


class ClaimError(Exception):
    """A claim that does not have the spec's shape: the launch is refused before anything is written."""


def _short(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def check(body: dict[str, Any], *, tool_url: str) -> None:
    """Refuse (ClaimError) a validated id_token's body whose claims do not have the spec's types, or whose
    target_link_uri is not on this tool (``tool_url``: AUTOGRADER_PUBLIC_URL)."""
    sub = body.get("sub")
    if not isinstance(sub, str) or not sub or len(sub) > 255:
        raise ClaimError("sub must be a non-empty string of at most 255 characters")
    roles = body.get(CLAIM + "roles")
    if not isinstance(roles, list) or not all(isinstance(r, str) for r in roles):
        raise ClaimError("the roles claim must be an array of strings (an empty array for no role)")
    for name in STRINGS:
        if body.get(name) is not None and not isinstance(body[name], str):
            raise ClaimError(f"{_short(name)} must be a string")
    for name, fields in OBJECTS.items():
        value = body.get(name)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ClaimError(f"the {_short(name)} claim must be a JSON object")
        for key in fields:
            if value.get(key) is not None and not isinstance(value[key], str):
                raise ClaimError(f"{_short(name)}.{key} must be a string")
    context = body.get(CLAIM + "context")
    if context is not None and not context.get("id"):
        raise ClaimError("the context claim must carry an id")
    if body.get(CLAIM + "message_type") == RESOURCE_LINK_REQUEST and not (body.get(CLAIM + "resource_link") or {}):
        raise ClaimError("a resource link launch must carry the resource_link claim")
    scope = (body.get(AGS) or {}).get("scope")
    if scope is not None and (not isinstance(scope, list) or not all(isinstance(s, str) for s in scope)):
        raise ClaimError("the AGS endpoint's scope must be an array of strings")
    custom = body.get(CLAIM + "custom")
    if custom is not None:
        if not isinstance(custom, dict):
            raise ClaimError("the custom claim must be a JSON object")
        for key, value in custom.items():
            if value is not None and not isinstance(value, str | int | float | bool):
                raise ClaimError(f"custom.{key} must be a string")
    target = body.get(CLAIM + "target_link_uri")
    if not isinstance(target, str) or not target:
        raise ClaimError("the target_link_uri claim is required")
    if not on_tool(target, tool_url):
        raise ClaimError("the target_link_uri claim names another tool, not this one")


def on_tool(url: str, tool_url: str) -> bool:
    """Whether ``url`` is on this tool: the public URL's scheme, host and port, and a path under its own."""
    got, ours = urlsplit(url), urlsplit(tool_url)
    if got.scheme.lower() != ours.scheme.lower() or got.netloc.lower() != ours.netloc.lower():
        return False
    base = ours.path.rstrip("/")
    return got.path == base or got.path.startswith(base + "/")
