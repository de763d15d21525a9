"""Inputs that used to be HTTP 500s (issue 14): each is now a 4xx naming the field, and nothing is written.

Every test runs on SQLite and on PostgreSQL (the database fixture), where a NUL character used to pass the schema
on one backend and fail in psycopg on the other: the refusal, and its message, are the same on both.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from app.problemsets.models import ProblemSet
from app.submissions.models import Submission
from tests.app.conftest import Account
from tests.app.test_problemset_upload import upload, zip_dir
from tests.conftest import FIXTURE_SETS

SUBMIT = "/api/v1/submissions"
NUL_MSG = "must not contain a NUL character (\\x00)"

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie.
pytestmark = pytest.mark.shared_app


def _count(sessions: Any, model: Any) -> int:
    with sessions() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


def _detail(response: Any, status: int) -> list[dict[str, Any]]:
    assert response.status_code == status, response.text
    detail: list[dict[str, Any]] = response.json()["detail"]
    return detail


def _multipart(**fields: str) -> dict[str, tuple[None, str]]:
    return {name: (None, value) for name, value in fields.items()}


def test_json_nested_10000_deep_in_a_multipart_answers_field(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    deep = "[" * 10_000 + "]" * 10_000
    files = _multipart(problem_set="basic", problem="t1", answers=deep)
    detail = _detail(client.post(SUBMIT, headers=accounts["alice"].headers, files=files), 422)
    assert detail[0]["loc"] == ["body", "answers"] and "nested more than 32 levels" in detail[0]["msg"]
    # Just over the bound is refused the same way; the JSON body of the same endpoint too.
    files = _multipart(problem_set="basic", problem="t1", answers='{"b1": ' + "[" * 40 + "]" * 40 + "}")
    assert _detail(client.post(SUBMIT, headers=accounts["alice"].headers, files=files), 422)[0]["loc"] == [
        "body",
        "answers",
    ]
    body = b'{"problem_set": "basic", "problem": "t1", "answers": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    headers = {**accounts["alice"].headers, "content-type": "application/json"}
    assert "nested" in _detail(client.post(SUBMIT, headers=headers, content=body), 422)[0]["msg"]
    assert _count(sessions, Submission) == 0


def _set_with_yaml(tmp_path: Path, yaml_text: str) -> bytes:
    root = tmp_path / "hostile"
    shutil.copytree(FIXTURE_SETS / "basic", root)
    (root / "problemset.yaml").write_text(yaml_text)
    return zip_dir(root)


def _report_messages(response: Any) -> list[str]:
    assert response.status_code == 422, response.text
    return [f"{e['file']}: {e['message']}" for e in response.json()["report"]["errors"]]


def test_yaml_nested_10000_deep_in_an_uploaded_set(
    client: TestClient, accounts: dict[str, Account], sessions: Any, tmp_path: Path
) -> None:
    deep = "id: deep\ntitle: x\nproblems: []\nextra: " + "[" * 10_000 + "]" * 10_000 + "\n"
    messages = _report_messages(upload(client, accounts["instructor"], _set_with_yaml(tmp_path, deep)))
    assert any("problemset.yaml" in m and "nested more than 32 levels" in m for m in messages), messages
    assert _count(sessions, ProblemSet) == 0


def test_yaml_alias_bombs_are_refused(
    client: TestClient, accounts: dict[str, Account], sessions: Any, tmp_path: Path
) -> None:
    laughs = "id: lol\ntitle: x\nproblems: []\na: &a [x, x, x, x, x, x, x, x, x]\n"
    for name, prev in zip("bcdefgh", "abcdefg", strict=True):
        laughs += f"{name}: &{name} [{', '.join([f'*{prev}'] * 9)}]\n"
    recursive = "id: rec\ntitle: x\nproblems: []\na: &a [*a]\n"
    many_aliases = "id: many\ntitle: x\nproblems: []\nx: &x 1\nys: [" + ", ".join(["*x"] * 101) + "]\n"
    for text, expected in (
        (laughs, "once its aliases are expanded"),
        (recursive, "recursive alias"),
        (many_aliases, "more than 100 aliases"),
    ):
        messages = _report_messages(upload(client, accounts["instructor"], _set_with_yaml(tmp_path, text)))
        assert any(expected in m for m in messages), messages
        shutil.rmtree(tmp_path / "hostile")
    assert _count(sessions, ProblemSet) == 0


def test_a_nul_in_the_yaml_of_a_set_is_refused_with_its_path(
    client: TestClient, accounts: dict[str, Account], sessions: Any, tmp_path: Path
) -> None:
    text = (FIXTURE_SETS / "basic" / "problemset.yaml").read_text().replace("title: Choice", 'title: "Cho\\0ice"')
    response = upload(client, accounts["instructor"], _set_with_yaml(tmp_path, text))
    errors = response.json()["report"]["errors"]
    assert response.status_code == 422 and errors[0]["path"] == "problems[1].title", errors
    assert NUL_MSG in errors[0]["message"]
    assert _count(sessions, ProblemSet) == 0


def test_a_second_empty_idempotency_key(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    answer = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder"}}
    headers = {**accounts["alice"].headers, "Idempotency-Key": ""}
    for _ in range(2):
        detail = _detail(client.post(SUBMIT, headers=headers, json=answer), 422)
        assert detail[0]["loc"] == ["header", "idempotency-key"]
    assert _count(sessions, Submission) == 0


def test_a_nul_anywhere_is_refused_the_same_way_on_both_backends(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    alice = accounts["alice"].headers
    path_set = _detail(client.get("/api/v1/problem-sets/ba%00sic", headers=alice), 422)
    assert path_set == [{"loc": ["path"], "msg": f"the path {NUL_MSG}", "type": "nul_character"}]
    path_problem = _detail(client.get("/api/v1/problem-sets/basic/problems/t%001", headers=alice), 422)
    assert path_problem[0]["loc"] == ["path"]
    query = _detail(client.get(f"{SUBMIT}?problem_set=ba%00sic", headers=alice), 422)
    assert query == [{"loc": ["query", "problem_set"], "msg": f"problem_set {NUL_MSG}", "type": "nul_character"}]
    body_set = {"problem_set": "ba\x00sic", "problem": "t1", "answers": {"b1": "x"}}
    assert _detail(client.post(SUBMIT, headers=alice, json=body_set), 422)[0] == {
        "loc": ["body", "problem_set"],
        "msg": NUL_MSG,
        "type": "nul_character",
    }
    answer = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "enc\x00oder"}}
    assert _detail(client.post(SUBMIT, headers=alice, json=answer), 422)[0] == {
        "loc": ["body", "answers", "b1"],
        "msg": NUL_MSG,
        "type": "nul_character",
    }
    files = _multipart(problem_set="basic", problem="t1", answers='{"b1": "enc\\u0000oder"}')
    assert _detail(client.post(SUBMIT, headers=alice, files=files), 422)[0]["loc"] == ["body", "answers"]
    login = client.post("/api/v1/auth/login", json={"email": "alice@example.com\x00", "password": "x"})
    assert _detail(login, 422)[0]["loc"] == ["body", "email"]
    assert _count(sessions, Submission) == 0


def test_a_nul_in_submitted_code_is_refused(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    code = {"problem_set": "basic", "problem": "t1", "code": "x = 1\x00"}
    assert _detail(client.post(SUBMIT, headers=accounts["alice"].headers, json=code), 422)[0]["loc"] == [
        "body",
        "code",
    ]
    files = {"problem_set": (None, "basic"), "problem": (None, "t1"), "file": ("a.py", b"x = 1\x00\n")}
    detail = _detail(client.post(SUBMIT, headers=accounts["alice"].headers, files=files), 422)
    assert detail[0]["loc"] == ["body", "file"] and NUL_MSG in detail[0]["msg"]
    assert _count(sessions, Submission) == 0


def test_two_file_fields_are_refused(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    files = [
        ("problem_set", (None, "basic")),
        ("problem", (None, "t1")),
        ("file", ("a.py", b"x = 1\n")),
        ("file", ("b.py", b"x = 2\n")),
    ]
    detail = _detail(client.post(SUBMIT, headers=accounts["alice"].headers, files=files), 422)
    assert detail[0]["loc"] == ["body", "file"] and "more than once" in detail[0]["msg"]
    assert _count(sessions, Submission) == 0


def test_unknown_multipart_parts_are_refused_briefly(
    client: TestClient, accounts: dict[str, Account], basic_set: str
) -> None:
    files = [(f"p{i}", (None, "x")) for i in range(5_000)] + [("problem_set", (None, "basic"))]
    response = client.post(SUBMIT, headers=accounts["alice"].headers, files=files)
    assert response.status_code in (400, 422) and len(response.content) < 2_000, response.text
    assert response.json()["detail"][0]["loc"][0] == "body"


def test_answers_and_code_to_a_fill_in_problem(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    both = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "encoder"}, "code": "x = 1\n"}
    assert _detail(client.post(SUBMIT, headers=accounts["alice"].headers, json=both), 422)[0]["loc"] == [
        "body",
        "code",
    ]
    assert _count(sessions, Submission) == 0


def test_a_lone_surrogate_is_refused_like_a_nul(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    """JSON may spell half a surrogate pair alone; stored, it made every page showing the answer a 500."""
    headers = {**accounts["alice"].headers, "Content-Type": "application/json"}
    raw = b'{"problem_set": "basic", "problem": "t1", "answers": {"b1": "x\\ud800y"}}'
    detail = _detail(client.post(SUBMIT, headers=headers, content=raw), 422)
    assert detail[0]["loc"] == ["body", "answers", "b1"] and detail[0]["type"] == "lone_surrogate", detail
    files = _multipart(problem_set="basic", problem="t1", answers='{"b1": "x\\ud800y"}')
    assert _detail(client.post(SUBMIT, headers=accounts["alice"].headers, files=files), 422)[0]["loc"][0] == "body"
    code = b'{"problem_set": "basic", "problem": "t1", "code": "x = \\"\\udfff\\""}'
    assert _detail(client.post(SUBMIT, headers=headers, content=code), 422)[0]["loc"] == ["body", "code"]
    assert _count(sessions, Submission) == 0
    # The gradebook and its statistics still answer.
    assert client.get("/api/v1/gradebook/basic/stats", headers=accounts["instructor"].headers).status_code == 200


def test_a_lone_surrogate_stored_before_it_was_refused_reads_back_as_a_replacement_character(
    client: TestClient, accounts: dict[str, Account], basic_set: str, sessions: Any
) -> None:
    """Answers stored before the schema refused lone surrogates may hold one (both databases' JSON keeps the
    escape): the pages and the API show U+FFFD instead of a 500."""
    body = {"problem_set": "basic", "problem": "t1", "answers": {"b1": "Decoder", "b2": "32"}}
    made = client.post(SUBMIT, headers=accounts["alice"].headers, params={"wait": 10}, json=body)
    assert made.json()["status"] == "graded", made.text
    sub_id = made.json()["id"]
    with sessions() as session:  # what an older version stored: the JSON escape of a lone half
        stored = {"answers": {"b1": "x\ud800y", "b2": "32"}}
        session.execute(update(Submission).where(Submission.id == sub_id).values(payload=stored))
        session.commit()
    with sessions() as session:
        assert session.get(Submission, sub_id).payload == {"answers": {"b1": "x\ufffdy", "b2": "32"}}
    staff = accounts["instructor"].headers
    assert client.get(f"{SUBMIT}/{sub_id}", headers=staff).status_code == 200
    stats = client.get("/api/v1/gradebook/basic/stats", headers=staff)
    assert stats.status_code == 200 and "x\ufffdy" in stats.content.decode(), stats.text
    assert client.get("/api/v1/gradebook/basic", headers=staff).status_code == 200
