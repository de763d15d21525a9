"""Registration: the tool's keys (generated once, rotated with a grace period), the platform API and the CLI."""

from __future__ import annotations

from datetime import timedelta

import jwt
from jwcrypto.jwk import JWK

from app.courses import accounts as account_service
from app.lti.keys import KeyStore
from app.users.models import Role
from tests.app.conftest import accounts  # noqa: F401
from tests.cli.test_cli import run  # noqa: F401


def test_the_key_is_generated_once_and_rotation_keeps_the_old_one_for_the_grace(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = KeyStore(tmp_path)
    first = store.current()
    assert KeyStore(tmp_path).current().kid == first.kid  # kept in the data dir, not made again
    assert (tmp_path / "lti" / "keys.json").stat().st_mode & 0o077 == 0
    second = store.rotate()
    assert second.kid != first.kid and store.current().kid == second.kid
    assert [k["kid"] for k in store.jwks()["keys"]] == [second.kid, first.kid]
    assert "d" not in store.jwks()["keys"][0]  # public parts only
    # A signature of the old key still verifies against the published set during the grace period.
    token = jwt.encode({"x": 1}, first.private_pem, algorithm="RS256", headers={"kid": first.kid})
    old = next(k for k in store.jwks()["keys"] if k["kid"] == first.kid)
    assert jwt.decode(token, JWK(**old).export_to_pem(), algorithms=["RS256"]) == {"x": 1}
    after_grace = KeyStore(tmp_path, grace=timedelta(0))
    assert [k["kid"] for k in after_grace.jwks()["keys"]] == [second.kid]


def test_admins_register_platforms_and_staff_read_the_values(lti_client, sessions, accounts) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    with sessions() as s:
        admin, _ = account_service.create_user(s, email="admin@uni.example", role=Role.ADMIN)
        _, admin_token = account_service.create_token(s, user=admin, name="t", scopes=["submit", "read", "instructor"])
        s.commit()
    body = {
        "issuer": "https://canvas.instructure.com", "client_id": "10000000000099", "deployment_ids": ["7:xyz"],
        "auth_login_url": "https://sso.canvaslms.com/api/lti/authorize_redirect",
        "auth_token_url": "https://sso.canvaslms.com/login/oauth2/token",
        "keyset_url": "https://sso.canvaslms.com/api/lti/security/jwks",
    }  # fmt: skip
    student = accounts["alice"].headers
    assert lti_client.post("/api/v1/lti/platforms", json=body, headers=student).status_code == 403
    assert lti_client.get("/api/v1/lti/tool", headers=student).status_code == 403
    admin_h = {"Authorization": f"Bearer {admin_token}"}
    made = lti_client.post("/api/v1/lti/platforms", json=body, headers=admin_h)
    assert made.status_code == 201, made.text
    assert made.json()["deployment_ids"] == ["7:xyz"]
    assert lti_client.post("/api/v1/lti/platforms", json=body, headers=admin_h).status_code == 409
    bad = lti_client.post("/api/v1/lti/platforms", json={**body, "client_id": "2", "keyset_url": "ftp://x"},
                          headers=admin_h)  # fmt: skip
    assert bad.status_code == 422 and "keyset_url" in bad.text
    # Plain http: refused unless the development setting allows it (the fixture's settings do, for the test LMS).
    plain = {**body, "client_id": "3", "issuer": "http://moodle.uni.example"}
    development = lti_client.app.state.settings
    lti_client.app.state.settings = development.model_copy(update={"lti_allow_http": False})
    try:
        refused = lti_client.post("/api/v1/lti/platforms", json=plain, headers=admin_h)
    finally:
        lti_client.app.state.settings = development
    assert refused.status_code == 422 and "AUTOGRADER_LTI_ALLOW_HTTP" in refused.text and "issuer" in refused.text
    assert "http://moodle.uni.example" not in lti_client.get("/api/v1/lti/platforms", headers=admin_h).text
    assert lti_client.post("/api/v1/lti/platforms", json=plain, headers=admin_h).status_code == 201
    issuers = [p["issuer"] for p in lti_client.get("/api/v1/lti/platforms", headers=admin_h).json()]
    assert "https://canvas.instructure.com" in issuers
    values = lti_client.get("/api/v1/lti/tool", headers=accounts["instructor"].headers).json()
    assert values["login_initiation_url"] == "http://testserver/lti/login"
    assert values["jwks_url"] == "http://testserver/lti/jwks"
    assert "https://purl.imsglobal.org/spec/lti-ags/scope/score" in values["scopes"]


def test_the_cli_registers_and_prints_what_to_paste(run) -> None:  # type: ignore[no-untyped-def]  # noqa: F811
    made = run(
        "lti", "register", "--issuer", "https://moodle.uni.example", "--client-id", "abc123",
        "--deployment-id", "1", "--deployment-id", "2",
        "--auth-login-url", "https://moodle.uni.example/mod/lti/auth.php",
        "--auth-token-url", "https://moodle.uni.example/mod/lti/token.php",
        "--keyset-url", "https://moodle.uni.example/mod/lti/certs.php",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    shown = run("lti", "show")
    assert shown.exit_code == 0, shown.output
    assert "/lti/login" in shown.output and "/lti/jwks" in shown.output and "deployments 1, 2" in shown.output
    kid = shown.output.split("Current key id:")[1].split()[0]
    rotated = run("lti", "rotate-key")
    assert rotated.exit_code == 0 and kid not in rotated.output
    again = run("lti", "register", "--issuer", "https://moodle.uni.example", "--client-id", "abc123",
                "--deployment-id", "1", "--auth-login-url", "https://x.example/a", "--auth-token-url",
                "https://x.example/t", "--keyset-url", "https://x.example/k")  # fmt: skip
    assert again.exit_code == 1 and "registered already" in again.output
