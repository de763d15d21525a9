"""One JSON error shape for every error, declared in an OpenAPI document that validates.

Each response below is checked against the ErrorBody schema taken from the served document itself, so the shape
docs/api.md promises, the shape the document declares and the shape the server sends cannot drift apart.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient
from openapi_spec_validator import validate as validate_openapi

from app.config import Settings
from app.main import create_app
from tests.app.conftest import Account

SUBMIT = "/api/v1/submissions"
# One app per module and backend (tests/conftest.py): the tests read its document and send it requests, each from
# emptied rows and no cookie; the two that hold SQLite's write lock have their own app and database.
pytestmark = pytest.mark.shared_app


@pytest.fixture
def document(client: TestClient) -> dict[str, Any]:
    response = client.get("/openapi.json")
    assert response.status_code == 200
    return response.json()


def _assert_error_shape(document: dict[str, Any], response: Any, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.headers
    body = response.json()
    schema = {**document["components"]["schemas"]["ErrorBody"], "components": document["components"]}
    resolver_root = {"components": document["components"], **schema}
    jsonschema.validate(body, resolver_root)
    assert body["request_id"] == response.headers["x-request-id"]
    assert body["detail"] and all(item["type"] and item["msg"] for item in body["detail"])
    return body


def _refs(node: Any) -> list[str]:
    found, stack = [], [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("$ref"), str):
                found.append(item["$ref"])
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


def test_the_document_validates_and_every_ref_resolves(document: dict[str, Any]) -> None:
    validate_openapi(document)
    refs = _refs(document)
    assert refs
    for ref in refs:
        assert ref.startswith("#/"), ref
        node: Any = document
        for part in ref[2:].split("/"):
            assert isinstance(node, dict) and part in node, f"{ref} does not resolve"
            node = node[part]


def test_the_submission_body_is_described(document: dict[str, Any]) -> None:
    # It used to point at #/components/schemas/SubmissionCreate, which the document did not define.
    content = document["paths"][SUBMIT]["post"]["requestBody"]["content"]
    json_body = content["application/json"]["schema"]
    assert {"problem_set", "problem", "answers", "code"} <= set(json_body["properties"])
    assert set(content["multipart/form-data"]["schema"]["properties"]) >= {"file", "answers"}


def test_every_operation_declares_its_errors_with_the_one_shape(document: dict[str, Any]) -> None:
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            errors = {int(s) for s in responses if s.isdigit() and int(s) >= 400}
            assert {422, 500, 503} <= errors, (method, path, errors)
            if path.startswith("/api/v1/") and not path.startswith("/api/v1/auth/log"):
                assert {401, 403} <= errors, (method, path)
            if "{" in path:
                assert 404 in errors, (method, path)
            if method in ("post", "put", "patch"):
                assert 413 in errors, (method, path)
            for status in errors:
                schema = responses[str(status)]["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, (method, path, status)
    create = document["paths"][SUBMIT]["post"]["responses"]
    assert {"400", "404", "409", "415"} <= set(create)
    assert "Retry-After" in create["503"]["headers"]


def test_every_kind_of_error_has_the_one_shape(
    client: TestClient, document: dict[str, Any], accounts: dict[str, Account], basic_set: str
) -> None:
    alice = accounts["alice"].headers
    cases = [
        (client.get(SUBMIT), 401),  # no credentials
        (client.get("/api/v1/gradebook/basic", headers=alice), 403),  # a student
        (client.get(f"{SUBMIT}/12345", headers=alice), 404),  # service NotFound
        (client.get("/api/v1/no-such-thing"), 404),  # routing
        (client.put(SUBMIT, headers=alice), 405),  # routing
        (client.post(SUBMIT, headers={**alice, "content-type": "text/plain"}, content=b"x"), 415),
        (client.post(SUBMIT, headers=alice, json={"problem_set": "basic"}), 422),  # schema
        (client.post("/api/v1/auth/login", content=b"{bad", headers={"content-type": "application/json"}), 422),
        (client.post(SUBMIT, headers={**alice, "content-type": "application/json"}, content=b"x" * 2_000_000), 413),
    ]
    for response, status in cases:
        _assert_error_shape(document, response, status)
    # The service error names its field and has a type (it had neither loc-less type nor type before).
    missing_problem = cases[6][0].json()["detail"]
    assert {"loc": ["body", "problem"], "msg": "Field required", "type": "missing"} in missing_problem
    assert cases[5][0].json()["detail"][0]["loc"] == ["header", "content-type"]


def test_body_parse_errors_are_items_not_strings(client: TestClient, document: dict[str, Any]) -> None:
    # JSON nested past the parser's recursion guard used to answer {"detail": "There was an error parsing the body"}.
    deep = b"[" * 10_000 + b"]" * 10_000
    response = client.post("/api/v1/auth/login", content=deep, headers={"content-type": "application/json"})
    body = _assert_error_shape(document, response, 422)
    assert body["detail"][0]["loc"] == ["body"] and "nested" in body["detail"][0]["msg"]


def test_a_refused_upload_names_the_file_field(
    client: TestClient, document: dict[str, Any], accounts: dict[str, Account]
) -> None:
    response = client.post(
        "/api/v1/problem-sets", headers=accounts["instructor"].headers, files={"file": ("x.zip", b"not a zip")}
    )
    body = _assert_error_shape(document, response, 422)
    assert body["report"]  # the validation report rides along in the same shape


def test_an_unhandled_exception_is_a_json_500_with_the_request_id_and_nothing_else(settings: Settings) -> None:
    app = create_app(settings, start_workers=False)

    def boom() -> None:
        raise RuntimeError("secret-sauce password=hunter2")

    app.add_api_route("/boom", boom)
    with TestClient(app, raise_server_exceptions=False) as client:
        response = client.get("/boom", headers={"X-Request-ID": "trace-me-1"})
        document = client.get("/openapi.json").json()
    body = _assert_error_shape(document, response, 500)
    assert body == {
        "detail": [{"loc": [], "msg": "internal server error", "type": "internal_error"}],
        "request_id": "trace-me-1",
    }
    assert "secret" not in response.text and "hunter2" not in response.text and "Traceback" not in response.text


def test_many_errors_make_a_short_body(client: TestClient, accounts: dict[str, Account], basic_set: str) -> None:
    # 60 000 unknown fields used to produce a 5 MB list of errors; 60 000 unknown parts a 3.5 MB message.
    fields = {f"x{i}": "" for i in range(60_000)}
    login = client.post("/api/v1/auth/login", json=fields)
    assert login.status_code == 422 and len(login.content) < 10_000
    assert login.json()["detail"][-1]["type"] == "too_many_errors"
    parts = client.post(
        SUBMIT,
        headers=accounts["alice"].headers,
        json={"problem_set": "basic", "problem": "t1", "answers": fields},
    )
    assert parts.status_code == 422 and len(parts.content) < 10_000
    assert parts.json()["detail"][0]["loc"] == ["body", "answers"]


@pytest.mark.slow
@pytest.mark.shared_app(False)  # the held lock would stall the shared app's workers too
def test_a_locked_sqlite_database_is_a_503_with_retry_after(
    settings: Settings, accounts: dict[str, Account], basic_set: str
) -> None:
    if not settings.resolved_database_url.startswith("sqlite"):
        pytest.skip("the lock is SQLite's; PostgreSQL waits for row locks instead")
    path = settings.resolved_database_url.removeprefix("sqlite:///")
    # A short busy timeout: the request waits it out against the held lock (10 s by default), and waiting is
    # all it would measure.
    app = create_app(settings.model_copy(update={"database_busy_timeout_s": 1.0}), start_workers=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        document = client.get("/openapi.json").json()
        assert client.get(SUBMIT, headers=accounts["alice"].headers).status_code == 200  # token's last use noted
        blocker = sqlite3.connect(path, timeout=0)
        blocker.execute("BEGIN EXCLUSIVE")  # another process holding the write lock (a backup, a migration)
        try:
            answer = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder"}}
            response = client.post(SUBMIT, headers=accounts["alice"].headers, json=answer)
        finally:
            blocker.rollback()
            blocker.close()
        body = _assert_error_shape(document, response, 503)
        assert int(response.headers["retry-after"]) > 0
        assert body["detail"][0]["type"] == "service_unavailable"
        # Nothing was half-written, and the client's retry succeeds.
        assert client.get(SUBMIT, headers=accounts["alice"].headers).json() == []
        assert client.post(SUBMIT, headers=accounts["alice"].headers, json=answer).status_code == 202


@pytest.mark.slow
@pytest.mark.shared_app(False)  # the held lock would stall the shared app's workers too
def test_a_read_goes_through_a_locked_sqlite_database(
    settings: Settings, accounts: dict[str, Account], basic_set: str
) -> None:
    # Recording a token's last use is the only write a GET makes: with the write lock held elsewhere it is given
    # up (after the busy timeout), and the read is answered instead of failing with the lock.
    if not settings.resolved_database_url.startswith("sqlite"):
        pytest.skip("the lock is SQLite's")
    path = settings.resolved_database_url.removeprefix("sqlite:///")
    # A short busy timeout: the request waits it out against the held lock (10 s by default), and waiting is
    # all it would measure.
    app = create_app(settings.model_copy(update={"database_busy_timeout_s": 1.0}), start_workers=False)
    with TestClient(app, raise_server_exceptions=False) as client:
        blocker = sqlite3.connect(path, timeout=0)
        blocker.execute("BEGIN EXCLUSIVE")
        try:
            response = client.get("/api/v1/problem-sets", headers=accounts["alice"].headers)
        finally:
            blocker.rollback()
            blocker.close()
    assert response.status_code == 200, response.text
    assert [s["id"] for s in response.json()] == ["basic"]


CREATING = ["/api/v1/courses", "/api/v1/courses/{course_slug}/offerings", "/api/v1/offerings/{offering_id}/assignments"]


@pytest.mark.parametrize("path", CREATING)
def test_creating_what_already_exists_is_a_documented_409(document: dict[str, Any], path: str) -> None:
    # A course or offering slug taken, a set already assigned in the offering: clients learn the 409 from the schema.
    responses = document["paths"][path]["post"]["responses"]
    schema = responses["409"]["content"]["application/json"]["schema"]
    assert schema["$ref"].endswith("/ErrorBody")
