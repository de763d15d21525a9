"""Claims by the LTI specifications: genuine id_tokens (signed by the registered test LMS) whose claims do not have
the spec's shape are refused with a 400 and nothing written; the registration is found by any audience, with
``azp`` naming it when there are several; target_link_uri must be on this tool; the deep-linking answer echoes
``data`` only when the request had some; registration takes https URLs only, unless AUTOGRADER_LTI_ALLOW_HTTP."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import httpx
import jwt
import pytest
from sqlalchemy import func, select

from app.courses.models import Course, Membership
from app.errors import Invalid
from app.lti import registration
from app.lti.models import LtiContext, LtiLaunchState, LtiPlatform, LtiResourceLink, LtiUser
from app.users.models import User
from tests.cli.test_cli import run  # noqa: F401
from tests.lti.conftest import launch
from tests.lti.platform import LTI, canvas_claims, deep_link_claims

# One app per module and backend (tests/conftest.py), as in test_launch: the rows are deleted and the platform
# registered again before each test, and a launch keeps its state in the database (app/lti/adapters.py). Most tests
# here are one launch, so building an app for each was most of their time.
pytestmark = pytest.mark.shared_app

AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"


def _counts(sessions) -> dict[str, int]:  # type: ignore[no-untyped-def]
    with sessions() as s:
        return {
            m.__name__: s.scalar(select(func.count()).select_from(m)) or 0
            for m in (User, Membership, LtiUser, LtiContext, LtiResourceLink, Course)
        }


def _teacher(platform, **changes: Any) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="p@uni.example",
                           custom={"problem_set": "basic"})  # fmt: skip
    for key, value in changes.items():
        if value is _DROP:
            claims.pop(key, None)
        else:
            claims[key] = value
    return claims


_DROP = object()

MALFORMED = {
    "custom as a string": {LTI + "custom": "problem_set=basic"},
    "a custom value that is an object": {LTI + "custom": {"problem_set": {"slug": "basic"}}},
    "context as a string": {LTI + "context": "4dde05e8ca1973bcca9bffc13e15488"},
    "context without an id": {LTI + "context": {"title": "Attention"}},
    "context id as a number": {LTI + "context": {"id": 42, "title": "Attention"}},
    "roles as a string": {LTI + "roles": "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"},
    "roles left out": {LTI + "roles": _DROP},
    "roles with a non-string": {LTI + "roles": [{"role": "Instructor"}]},
    "resource_link as a string": {LTI + "resource_link": "rl-1"},
    "the AGS endpoint as a string": {AGS: "http://lms.example/lineitems"},
    "AGS scope as a string": {AGS: {"scope": "https://purl.imsglobal.org/spec/lti-ags/scope/score"}},
    "lis as a list": {LTI + "lis": ["sis-1"]},
    "launch_presentation as a string": {LTI + "launch_presentation": "iframe"},
    "email as a list": {"email": ["p@uni.example"]},
    "target_link_uri left out": {LTI + "target_link_uri": _DROP},
    "target_link_uri of another tool": {LTI + "target_link_uri": "https://other-tool.example/lti/launch"},
    "target_link_uri on a look-alike host": {LTI + "target_link_uri": "http://testserver.evil.example/lti/launch"},
    "target_link_uri over another scheme": {LTI + "target_link_uri": "https://testserver/lti/launch"},
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_a_malformed_claim_is_a_400_with_nothing_written(case, lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    before = _counts(sessions)
    posted = launch(lti_client, platform, _teacher(platform, **MALFORMED[case]))
    assert posted.response.status_code == 400, posted.response.text
    assert "LTI launch refused" in posted.response.text
    assert _counts(sessions) == before
    assert "user_id" not in lti_client.get("/api/v1/auth/me").text
    with sessions() as s:  # no validated launch kept either
        assert (
            s.scalar(
                select(func.count()).select_from(LtiLaunchState).where(LtiLaunchState.key.like("%lti1p3-launch-%"))
            )
            == 0
        )


def test_custom_scalars_are_read_as_their_text(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    custom = {"problem_set": "basic", "week": 3, "unset": None}
    posted = launch(lti_client, platform, _teacher(platform, **{LTI + "custom": custom}))
    assert posted.response.status_code == 303, posted.response.text


@pytest.mark.parametrize(
    ("audiences", "azp", "tamper", "status"),
    [
        (["some-other-tool", "{us}"], "{us}", "", 303),  # our client id second: found by azp, not aud[0]
        (["{us}", "some-other-tool"], "{us}", "", 303),
        (["{us}", "some-other-tool"], None, "no-azp", 401),  # several audiences and no azp
        (["some-other-tool", "{us}"], None, "no-azp", 401),
        (["{us}", "some-other-tool"], "some-third-tool", "", 401),  # azp not among the audiences
        ("{us}", "some-other-tool", "", 401),  # one audience, but authorised for another party
        ("{us}", None, "no-azp", 303),  # one audience, no azp: fine (OIDC)
    ],
)
def test_the_registration_is_found_by_any_audience_and_azp_decides(  # type: ignore[no-untyped-def]
    audiences, azp, tamper, status, lti_client, platform, sessions, basic_set
) -> None:
    us = platform.client_id
    aud = [a.replace("{us}", us) for a in audiences] if isinstance(audiences, list) else audiences.replace("{us}", us)
    changes: dict[str, Any] = {"aud": aud}
    if azp is not None:
        changes["azp"] = azp.replace("{us}", us)
    before = _counts(sessions)
    posted = launch(lti_client, platform, _teacher(platform, **changes), tamper=tamper)
    assert posted.response.status_code == status, posted.response.text
    if status != 303:
        assert _counts(sessions) == before


def _deep_link_answer(client, platform, claims) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    posted = launch(client, platform, claims)
    assert posted.response.headers["location"] == "/lti/deep-link", posted.response.text
    page = client.get("/lti/deep-link")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    answer = client.post("/lti/deep-link", data={"csrf_token": token, "problem_set": "basic"})
    assert answer.status_code == 200, answer.text
    action = unescape(re.search(r'id="lti-deep-link" method="post" action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    value = unescape(re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    assert httpx.post(action, data={"JWT": value}, timeout=30).status_code == 200  # the platform verified it
    return dict(jwt.decode(value, options={"verify_signature": False}))


def test_the_deep_linking_answer_has_no_data_claim_when_the_request_had_none(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    claims = deep_link_claims(platform, sub="t-1", role="Instructor")
    settings = claims["https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"]
    del settings["data"]
    answer = _deep_link_answer(lti_client, platform, claims)
    assert DL + "data" not in answer
    assert answer[DL + "content_items"][0]["lineItem"]["tag"] == "autograder"


def test_registration_refuses_plain_http_unless_the_development_setting_allows_it(sessions, run) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    https = {"issuer": "https://lms.uni.example", "client_id": "c1", "deployment_ids": ["1"],
             "auth_login_url": "https://lms.uni.example/auth", "auth_token_url": "https://lms.uni.example/token",
             "keyset_url": "https://lms.uni.example/jwks"}  # fmt: skip
    with sessions() as s:
        for field in ("issuer", "auth_login_url", "auth_token_url", "keyset_url"):
            plain = {**https, field: https[field].replace("https://", "http://")}
            with pytest.raises(Invalid) as refused:
                registration.register_platform(s, **plain)  # type: ignore[arg-type]
            assert refused.value.field == field and "AUTOGRADER_LTI_ALLOW_HTTP" in refused.value.message
            s.rollback()
        assert s.scalar(select(func.count()).select_from(LtiPlatform)) == 0
        loopback = {k: v.replace("https://lms.uni.example", "http://127.0.0.1:9") for k, v in https.items()
                    if isinstance(v, str)}  # fmt: skip
        made = registration.register_platform(s, **{**https, **loopback}, allow_http=True)  # type: ignore[arg-type]
        assert made.keyset_url == "http://127.0.0.1:9/jwks"
    http = "http://moodle.uni.example"
    cli = run("lti", "register", "--issuer", http, "--client-id", "abc", "--deployment-id", "1",
              "--auth-login-url", f"{http}/auth", "--auth-token-url", f"{http}/token",
              "--keyset-url", f"{http}/k")  # fmt: skip
    assert cli.exit_code == 1 and "https" in cli.output
