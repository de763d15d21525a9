"""Deep linking: the instructor picks a set inside the LMS; the platform verifies our signed response (kid, aud,
iss, deployment, data) and the link it creates launches students onto the assignment."""

from __future__ import annotations

import re
from html import unescape

import httpx

from tests.lti.conftest import launch
from tests.lti.platform import LTI, canvas_claims, deep_link_claims

DL = "https://purl.imsglobal.org/spec/lti-dl/claim/"


def test_an_instructor_picks_a_set_and_the_platform_verifies_the_response(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    posted = launch(lti_client, platform, deep_link_claims(platform, sub="t-1", role="Instructor"))
    assert posted.response.headers["location"] == "/lti/deep-link"
    page = lti_client.get("/lti/deep-link")
    assert page.status_code == 200 and 'value="basic"' in page.text
    token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
    answer = lti_client.post("/lti/deep-link", data={"csrf_token": token, "problem_set": "basic"})
    assert answer.status_code == 200, answer.text
    action = unescape(re.search(r'id="lti-deep-link" method="post" action="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    jwt_value = unescape(re.search(r'name="JWT" value="([^"]+)"', answer.text).group(1))  # type: ignore[union-attr]
    assert action == f"{platform.base_url}/deep_link_return"
    returned = httpx.post(action, data={"JWT": jwt_value}, timeout=30)
    assert returned.status_code == 200, returned.text  # the platform verified our signature against our JWKS
    [claims] = platform.deep_link_responses
    assert claims["iss"] == platform.client_id and claims["aud"] == [platform.issuer]
    assert claims[LTI + "message_type"] == "LtiDeepLinkingResponse"
    assert claims[LTI + "deployment_id"] == platform.deployment_id and claims[DL + "data"] == "platform-opaque-data"
    [item] = claims[DL + "content_items"]
    assert item["type"] == "ltiResourceLink" and item["url"] == "http://testserver/lti/launch"
    assert item["custom"] == {"problem_set": "basic"}
    assert item["lineItem"] == {"scoreMaximum": 8.0, "label": "Basic test set", "resourceId": "basic",
                                "tag": "autograder"}  # fmt: skip
    # A second answer for the same launch is refused: the deep link was answered.
    assert lti_client.post("/lti/deep-link", data={"csrf_token": token, "problem_set": "basic"}).status_code == 401

    # The LMS now launches its students through the new link, with the custom parameters it was given.
    lti_client.cookies.clear()
    student = canvas_claims(platform, sub="s-1", role="Learner", link="rl-new", context="ctx-dl", custom=item["custom"])
    landed = launch(lti_client, platform, student)
    assert landed.response.status_code == 303 and landed.response.headers["location"].startswith("/sets/basic")


def test_a_student_cannot_deep_link(lti_client, platform, basic_set) -> None:  # type: ignore[no-untyped-def]
    launch(lti_client, platform, deep_link_claims(platform, sub="t-1", role="Instructor"))
    lti_client.cookies.clear()
    posted = launch(lti_client, platform, deep_link_claims(platform, sub="s-1", role="Learner"))
    assert posted.response.status_code == 401 and "only instructors" in posted.response.text
    assert lti_client.get("/lti/deep-link", follow_redirects=False).status_code in (303, 401)
