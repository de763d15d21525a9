"""Every response carries a request id; a client's own id is kept only when it is safe to log."""

from __future__ import annotations

from fastapi.testclient import TestClient


def test_each_response_gets_a_fresh_id(client: TestClient) -> None:
    first = client.get("/healthz").headers["x-request-id"]
    second = client.get("/healthz").headers["x-request-id"]
    assert first and second and first != second


def test_a_safe_client_id_is_kept(client: TestClient) -> None:
    assert client.get("/healthz", headers={"X-Request-ID": "ci-job-42.7"}).headers["x-request-id"] == "ci-job-42.7"


def test_an_unsafe_client_id_is_replaced(client: TestClient) -> None:
    # A newline or a very long value would forge log lines or bloat headers: a fresh id is used instead.
    for hostile in ("a\tb", "x" * 65, "id with spaces", "<script>"):
        got = client.get("/healthz", headers={"X-Request-ID": hostile}).headers["x-request-id"]
        assert got != hostile and len(got) == 32


def test_a_refused_body_still_has_an_id(client: TestClient) -> None:
    response = client.post(
        "/api/v1/auth/login", content=b"x" * 50_000_000, headers={"content-type": "application/json"}
    )
    assert response.status_code == 413
    assert response.headers["x-request-id"]
