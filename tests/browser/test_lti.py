"""The LTI pages in the browser, launched from the test LMS (tests/lti/platform.py, a real server on 127.0.0.1):
the link question of a first instructor launch, the offering's LMS page, the deep-link picker and the error page
of a refused launch, each checked with axe-core."""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.parse import urlencode

from tests.browser.conftest import Server, check_a11y, shot
from tests.lti import platform as lms
from tests.lti.platform import PlatformServer, canvas_claims, deep_link_claims

CONTEXT = "browser-lms-course"


def _register(server: Server, platform: lms.TestPlatform) -> None:
    """The admin registers the LMS; its instructor t-1 is linked to teacher@example.com (who teaches the demo)."""
    from sqlalchemy import select

    from app.db import make_engine, make_session_factory
    from app.lti import registration
    from app.lti.models import LtiUser
    from app.users.models import User

    engine = make_engine(server.database_url)
    with make_session_factory(engine)() as session:
        registration.register_platform(
            session, issuer=platform.issuer, client_id=platform.client_id, deployment_ids=[platform.deployment_id],
            auth_login_url=f"{platform.base_url}/auth", auth_token_url=f"{platform.base_url}/token",
            keyset_url=f"{platform.base_url}/jwks", name="Browser LMS", allow_http=True,  # the test LMS: http
        )  # fmt: skip
        teacher = session.scalars(select(User).where(User.email == "teacher@example.com")).one()
        session.add(LtiUser(issuer=platform.issuer, sub="t-1", user_id=teacher.id))
        session.commit()
    engine.dispose()
    with urllib.request.urlopen(server.url + "/lti/jwks", timeout=10) as resp:
        platform.tool_jwks = json.loads(resp.read())


def _launch(page: Any, server: Server, platform: lms.TestPlatform, claims: dict[str, Any], tamper: str = "") -> None:
    """The LMS's login initiation, our redirect to its auth page, its form posted back (the LMS's script does it)."""
    hint = platform.expect_launch(claims, tamper)
    query = {"iss": platform.issuer, "login_hint": hint, "target_link_uri": f"{server.url}/lti/launch",
             "client_id": platform.client_id, "lti_deployment_id": platform.deployment_id}  # fmt: skip
    page.goto("/lti/login?" + urlencode(query))
    page.wait_for_selector("form#f", state="attached")
    with page.expect_navigation():
        page.evaluate("document.getElementById('f').submit()")


def test_lti_pages_are_accessible(new_page: Any, server: Server) -> None:
    with PlatformServer(lms.TestPlatform(redirect_uris=[f"{server.url}/lti/launch"])) as platform:
        _register(server, platform)
        page = new_page()
        teacher = canvas_claims(platform, sub="t-1", role="Instructor", link="rl-browser", context=CONTEXT,
                                email="teacher@example.com", custom={"problem_set": "ch9"})  # fmt: skip
        _launch(page, server, platform, teacher)
        page.wait_for_url("**/lti/link")
        assert page.get_by_role("heading", name="Link your LMS course").is_visible()
        shot(page, "40-lti-link")
        check_a11y(page, "40-lti-link")

        page.get_by_label("A new offering for this LMS course").check()
        page.get_by_role("button", name="Continue").click()
        page.wait_for_url("**/sets/ch9?offering=*")
        offering = page.url.rsplit("=", 1)[1]
        page.goto(f"/offerings/{offering}/lti")
        page.get_by_role("button", name="Sync the roster from the LMS").click()
        page.wait_for_url(f"**/offerings/{offering}/lti")
        assert "Roster sync:" in page.get_by_role("status").first.inner_text()
        shot(page, "41-lti-offering")
        check_a11y(page, "41-lti-offering")

        _launch(page, server, platform, deep_link_claims(platform, sub="t-1", role="Instructor", context=CONTEXT))
        page.wait_for_url("**/lti/deep-link")
        assert page.get_by_role("group", name="Problem set").is_visible()
        shot(page, "42-lti-deep-link")
        check_a11y(page, "42-lti-deep-link")

        _launch(page, server, platform, teacher, tamper="signature")
        assert "LTI launch refused" in page.content()
        shot(page, "43-lti-error")
        check_a11y(page, "43-lti-error")
