"""The LTI pages open in the LMS's iframe: their frame-ancestors name the registered platform (and the LMS page a
launch says it returns to), while every other page, and a browser that never launched, may be framed by this site
only."""

from __future__ import annotations

import re
from html import unescape
from urllib.parse import urlsplit

import pytest

from app.security_headers import origin_of
from tests.lti.conftest import launch
from tests.lti.platform import LTI, canvas_claims, deep_link_claims

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie, and
# none changes the app's settings or leaves work running.
pytestmark = pytest.mark.shared_app

SCHOOL = "https://school.example"  # Canvas's issuer is not the school's domain that frames the tool


def _frame_ancestors(response) -> list[str]:  # type: ignore[no-untyped-def]
    policy = response.headers["content-security-policy"]
    [directive] = [d.strip() for d in policy.split(";") if d.strip().startswith("frame-ancestors ")]
    return directive.split()[1:]


def _platform_origin(platform) -> str:  # type: ignore[no-untyped-def]
    origin = origin_of(platform.base_url)
    assert origin is not None
    return origin


def test_a_launched_session_may_be_framed_by_its_platform(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    assert _frame_ancestors(lti_client.get("/login")) == ["'self'"]  # before any launch: this site only
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-1", email="prof@uni.example",
                           custom={"problem_set": "basic"})  # fmt: skip
    claims[LTI + "launch_presentation"] = {"document_target": "iframe", "return_url": f"{SCHOOL}/courses/1"}
    posted = launch(lti_client, platform, claims)
    assert posted.response.status_code == 303, posted.response.text
    assert _platform_origin(platform) in _frame_ancestors(posted.response)
    page = lti_client.get(posted.response.headers["location"])  # what the launched user sees
    assert page.status_code == 200
    ancestors = _frame_ancestors(page)
    assert ancestors[0] == "'self'" and _platform_origin(platform) in ancestors and SCHOOL in ancestors
    assert _platform_origin(platform) in _frame_ancestors(lti_client.get("/history"))

    other = lti_client.__class__(lti_client.app)  # a browser logged in with a password: this site only
    assert _frame_ancestors(other.get("/login")) == ["'self'"]

    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    lti_client.post("/logout", data={"csrf_token": token})
    assert _frame_ancestors(lti_client.get("/login")) == ["'self'"]  # the session, and its platforms, are gone


def test_a_refused_launch_page_may_be_framed_by_the_registered_platforms(lti_client, platform) -> None:  # type: ignore[no-untyped-def]
    claims = canvas_claims(platform, sub="s-1", role="Learner", link="rl-1")
    refused = launch(lti_client, platform, claims, tamper="signature")
    assert refused.response.status_code == 401
    assert _frame_ancestors(refused.response) == ["'self'", _platform_origin(platform)]  # the LMS shows the error
    assert _frame_ancestors(lti_client.get("/login")) == ["'self'"]


def test_the_deep_linking_answer_may_post_to_the_platform(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    launch(lti_client, platform, deep_link_claims(platform, sub="t-1", role="Instructor"))
    page = lti_client.get("/lti/deep-link")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    answer = lti_client.post("/lti/deep-link", data={"csrf_token": token, "problem_set": "basic"})
    assert answer.status_code == 200, answer.text
    action = unescape(re.search(r'id="lti-deep-link" method="post" action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    policy = [d.strip() for d in answer.headers["content-security-policy"].split(";")]
    target = f"{urlsplit(action).scheme}://{urlsplit(action).netloc}"
    assert f"form-action 'self' {target}" in policy  # the auto-posting form may reach the LMS
    assert '<script defer src="/static/deep_link.js"></script>' in answer.text  # not inline: script-src 'self'
    assert lti_client.get("/static/deep_link.js").status_code == 200
    assert "form-action 'self'" in [
        d.strip() for d in lti_client.get("/history").headers["content-security-policy"].split(";")
    ]
