"""One test LMS per module (a real HTTP server), our app with that platform registered, and a browser-like launch.

The launch goes the way a browser takes it: the LMS's login initiation to our /lti/login, our redirect to the
platform's auth endpoint (fetched over real HTTP), the platform's auto-posting form back to our /lti/launch.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.courses import accounts
from app.lti import registration
from app.lti.keys import KeyStore
from app.lti.models import LtiUser
from app.main import create_app
from app.users.models import Role
from tests.app.conftest import _wait_idle, basic_set  # noqa: F401
from tests.conftest import shares_app
from tests.lti.platform import PlatformServer, TestPlatform

TOOL = "http://testserver"


@pytest.fixture(scope="module")
def platform() -> Iterator[TestPlatform]:
    with PlatformServer(TestPlatform(redirect_uris=[f"{TOOL}/lti/launch"])) as running:
        yield running


@pytest.fixture(scope="session")
def tool_key_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One tool key for the session (an RSA key per test would cost more than the test)."""
    root = tmp_path_factory.mktemp("toolkey")
    KeyStore(root).current()
    return root / "lti" / "keys.json"


@pytest.fixture
def lti_settings(settings: Settings, tool_key_file: Path) -> Settings:
    (settings.data_dir / "lti").mkdir(parents=True, exist_ok=True)
    shutil.copy(tool_key_file, settings.data_dir / "lti" / "keys.json")
    # The test LMS serves plain http on 127.0.0.1: registration allows that only with AUTOGRADER_LTI_ALLOW_HTTP.
    return settings.model_copy(
        update={"public_url": TOOL, "lti_passback_retry_delays_s": [0.0, 0.0, 0.0], "lti_allow_http": True}
    )


@pytest.fixture
def lti_client(  # type: ignore[no-untyped-def]
    request: pytest.FixtureRequest, lti_settings: Settings, platform: TestPlatform, sessions
) -> Iterator[TestClient]:
    platform.reset()
    with sessions() as session:
        registration.register_platform(
            session, issuer=platform.issuer, client_id=platform.client_id, deployment_ids=[platform.deployment_id],
            auth_login_url=f"{platform.base_url}/auth", auth_token_url=f"{platform.base_url}/token",
            keyset_url=f"{platform.base_url}/jwks", name="Test LMS", allow_http=lti_settings.lti_allow_http,
        )  # fmt: skip
        # The LMS's instructor t-1 is linked to an instructor account of ours that teaches the demo offering (where
        # the fixture sets are): that is what lets their launches bring a set into the LMS course.
        teacher, _ = accounts.create_user(
            session, email="prof@uni.example", role=Role.INSTRUCTOR, display_name="Ada Prof"
        )
        session.add(LtiUser(issuer=platform.issuer, sub="t-1", user_id=teacher.id))
        session.commit()
    if shares_app(request):  # the module's one app on this backend (tests/conftest.py), its settings as built
        shared = request.getfixturevalue("shared_apps")
        key = "lti-" + shared.backend_of(lti_settings.database_url)
        if key not in shared.clients:
            shared.clients[key] = TestClient(create_app(lti_settings)).__enter__()
            shared.clients[key].app.state.lti_passback.stop()  # as below
            shared.settings[key] = shared.clients[key].app.state.settings
        client = shared.clients[key]
        client.cookies.clear()
        client.app.state.settings = shared.settings[key]
        platform.tool_jwks = client.get("/lti/jwks").json()
        yield client
        _wait_idle(client)
        return
    with TestClient(create_app(lti_settings)) as client:
        # The tests run the LTI job themselves (``run_once``): its thread would race them for the queued rows (a
        # roster sync claimed by the thread is not there for the test's round, which then counts 0).
        client.app.state.lti_passback.stop()
        # The LMS admin pastes our public JWK into the platform (Canvas's "Public JWK" field).
        platform.tool_jwks = client.get("/lti/jwks").json()
        yield client


@dataclass
class Posted:
    response: httpx.Response
    id_token: str
    state: str
    action: str


def launch(
    client: TestClient, platform: TestPlatform, claims: dict[str, Any], tamper: str = "", link: str | None = "new"
) -> Posted:
    """Run one launch through the browser's three hops; returns our answer to the platform's form post.

    The first instructor launch from an LMS course asks which offering to link it to (/lti/link): ``link`` is the
    answer given ("new", an offering id), and the answer's response is returned; None stops at the question.
    """
    hint = platform.expect_launch(claims, tamper)
    init = client.get(
        "/lti/login",
        params={"iss": platform.issuer, "login_hint": hint, "target_link_uri": f"{TOOL}/lti/launch",
                "client_id": platform.client_id, "lti_deployment_id": platform.deployment_id,
                "lti_message_hint": "msg-hint"},
        follow_redirects=False,
    )  # fmt: skip
    assert init.status_code == 302, init.text
    auth = httpx.get(init.headers["location"], timeout=10)
    assert auth.status_code == 200, auth.text
    action = unescape(re.search(r'action="([^"]+)"', auth.text).group(1))  # type: ignore[union-attr]
    id_token = unescape(re.search(r'name="id_token" value="([^"]+)"', auth.text).group(1))  # type: ignore[union-attr]
    state = unescape(re.search(r'name="state" value="([^"]+)"', auth.text).group(1))  # type: ignore[union-attr]
    answer = client.post(urlsplit(action).path, data={"id_token": id_token, "state": state}, follow_redirects=False)
    if link is not None and answer.status_code == 303 and answer.headers["location"] == "/lti/link":
        page = client.get("/lti/link")
        assert page.status_code == 200, page.text
        token = page.text.split('name="csrf_token" value="')[1].split('"')[0]
        answer = client.post("/lti/link", data={"csrf_token": token, "offering": link}, follow_redirects=False)
    return Posted(answer, id_token, state, urlsplit(action).path)
