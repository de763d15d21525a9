"""Attacks on the LTI endpoints by someone with a real LMS account or none: a deep-link answer replayed with a copy
of the session cookie from before the answer, a deep-link return URL that is no http(s) URL, markup in the names
and titles the LMS sends, and a flood of login initiations from one address."""

from __future__ import annotations

import re
from html import unescape

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.courses.models import Membership
from app.lti.models import LtiContext, LtiLaunchState
from app.main import create_app
from tests.lti.conftest import launch
from tests.lti.platform import LTI, canvas_claims, deep_link_claims

DL_SETTINGS = "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"
MARKUP = '<img src=x onerror="alert(1)">'


def test_a_deep_link_answer_replayed_with_an_old_cookie_is_refused(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    launch(lti_client, platform, deep_link_claims(platform, sub="t-1", role="Instructor"))
    page = lti_client.get("/lti/deep-link")
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    before_answer = httpx.Cookies(lti_client.cookies)  # the attacker keeps the cookie that names the launch
    answer = lti_client.post("/lti/deep-link", data={"csrf_token": token, "problem_set": "basic"})
    assert answer.status_code == 200 and 'name="JWT"' in answer.text
    lti_client.cookies = before_answer
    again = lti_client.post("/lti/deep-link", data={"csrf_token": token, "problem_set": "basic"})
    assert again.status_code == 401 and "over or unknown" in again.text
    assert 'name="JWT"' not in again.text


def test_a_deep_link_return_url_that_is_not_http_is_refused(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    claims = deep_link_claims(platform, sub="t-1", role="Instructor", context="ctx-js")
    claims[DL_SETTINGS] = {**claims[DL_SETTINGS], "deep_link_return_url": "javascript:alert(document.cookie)"}
    posted = launch(lti_client, platform, claims)
    assert posted.response.status_code == 401 and "not an http(s) URL" in posted.response.text
    with sessions() as s:  # refused before the course was made
        assert s.scalar(select(LtiContext).where(LtiContext.context_id == "ctx-js")) is None


def test_markup_in_lms_names_and_titles_is_shown_as_text(lti_client, platform, sessions, basic_set) -> None:  # type: ignore[no-untyped-def]
    claims = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-x", context="ctx-xss", name=MARKUP,
                           email="prof@uni.example", custom={"problem_set": "basic"})  # fmt: skip
    claims[LTI + "context"] = {**claims[LTI + "context"], "title": MARKUP}
    claims[LTI + "resource_link"] = {"id": "rl-x", "title": MARKUP}
    posted = launch(lti_client, platform, claims)
    assert posted.response.status_code == 303, posted.response.text
    offering_id = int(re.search(r"offering=(\d+)", posted.response.headers["location"]).group(1))  # type: ignore[union-attr]
    with sessions() as s:  # the claims were stored as they came
        names = set(s.scalars(select(Membership.name).where(Membership.offering_id == offering_id)))
        assert MARKUP in names
    for path in (f"/offerings/{offering_id}", f"/offerings/{offering_id}/roster", f"/offerings/{offering_id}/lti"):
        page = lti_client.get(path)
        assert page.status_code == 200, (path, page.text)
        assert MARKUP not in page.text and "<img" not in page.text, path
        assert MARKUP in unescape(page.text), path  # shown, escaped


def test_login_initiation_is_limited_per_address(lti_settings, platform, lti_client, sessions) -> None:  # type: ignore[no-untyped-def]
    # Every login initiation of a registered platform stores a state and a nonce before anyone is known.
    settings = lti_settings.model_copy(update={"rate_unauthenticated_per_address": 3})
    params = {"iss": platform.issuer, "login_hint": "x", "target_link_uri": "http://testserver/lti/launch",
              "client_id": platform.client_id}  # fmt: skip
    with TestClient(create_app(settings), client=("192.0.2.77", 4000)) as flood:
        codes = [flood.get("/lti/login", params=params, follow_redirects=False).status_code for _ in range(4)]
        with sessions() as s:
            stored = s.scalar(select(func.count()).select_from(LtiLaunchState))
        refused = flood.post("/lti/launch", data={"id_token": "x", "state": "y"})
        invite = flood.get("/invite/whatever")
    assert codes[:3] == [302, 302, 302] and codes[3] == 429
    assert refused.status_code == 429 and invite.status_code == 429
    with sessions() as s:  # the refused initiation stored nothing
        assert s.scalar(select(func.count()).select_from(LtiLaunchState)) == stored
