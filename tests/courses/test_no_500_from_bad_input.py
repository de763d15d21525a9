"""Input any client (or an instructor) can send that used to be a 500: each is a 422 in the one error shape, naming
the field, and nothing is stored. Both backends (the database fixture's parameters) unless a case is SQLite-only.

- an aware date that has no UTC form (year 1 east of UTC, year 9999 west of it): OverflowError writing the row;
- ``?wait=nan`` (and inf, -1): the wait loop's deadline became NaN;
- a roster CSV field over csv's own 131 072-character limit: an uncaught csv.Error;
- ``null`` for a PATCH field whose column is NOT NULL: an IntegrityError;
- a roster CSV holding a NUL: stored on SQLite, refused (a DataError) only by PostgreSQL.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.config import Settings
from app.courses import roster
from app.courses.models import Membership
from app.input_types import to_utc
from app.main import create_app
from app.users.models import ApiToken
from graders.input_limits import MAX_CSV_BYTES
from tests.app.conftest import submit_as
from tests.conftest import BOTH_DATABASES
from tests.courses.conftest import World

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no login.
pytestmark = pytest.mark.shared_app

OUT_OF_RANGE = [
    "0001-01-01T00:00:00+05:00",  # year 0 in UTC
    "9999-12-31T23:59:59-05:00",  # year 10000 in UTC
    "0001-01-01T00:00:00",  # representable, but before anything this server keeps
    "9999-12-31T23:59:59Z",  # representable; a due date plus late days would not be
    "1969-12-31T23:59:59Z",
]


def assert_422(resp: httpx.Response, loc: list[str | int], type_: str | None = None) -> dict[str, Any]:
    assert resp.status_code == 422, resp.text
    body = resp.json()
    assert set(body) >= {"detail", "request_id"} and body["request_id"], body
    assert body["detail"][0]["loc"] == loc, body
    if type_ is not None:
        assert body["detail"][0]["type"] == type_, body
    return body


def login(client: TestClient, account) -> None:  # type: ignore[no-untyped-def]
    resp = client.post("/api/v1/auth/login", json={"email": account.email, "password": account.password})
    assert resp.status_code == 200, resp.text


# --- dates -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("when", OUT_OF_RANGE)
def test_a_token_expiry_out_of_range_is_422(client: TestClient, accounts, sessions, when: str) -> None:  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])  # tokens are made from a logged-in session
    resp = client.post("/api/v1/tokens", json={"name": "far", "expires_at": when})
    assert_422(resp, ["body", "expires_at"], "datetime_out_of_range")
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(ApiToken).where(ApiToken.name == "far")) == 0


def test_a_token_expiry_in_range_keeps_its_instant(client: TestClient, accounts) -> None:  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    resp = client.post("/api/v1/tokens", json={"name": "ok", "expires_at": "2031-06-01T12:00:00+05:00"})
    assert resp.status_code == 201, resp.text
    assert to_utc(datetime.fromisoformat(resp.json()["expires_at"])) == datetime(2031, 6, 1, 7, tzinfo=UTC)


@pytest.mark.parametrize("database_url", BOTH_DATABASES, indirect=True)
@pytest.mark.parametrize("when", OUT_OF_RANGE[:2])
def test_offering_assignment_and_override_dates_out_of_range_are_422(
    client: TestClient, world: World, when: str
) -> None:  # type: ignore[no-untyped-def]
    head = world.people["b:instructor"].headers
    for field in ("starts_at", "ends_at", "self_join_until"):
        assert_422(client.patch(f"/api/v1/offerings/{world.b}", json={field: when}, headers=head), ["body", field])
    for field in ("open_at", "due_at"):
        resp = client.patch(f"/api/v1/assignments/{world.assignment_b}", json={field: when}, headers=head)
        assert_422(resp, ["body", field])
    resp = client.post(f"/api/v1/assignments/{world.assignment_b}/overrides",
                       json={"email": "student-b@example.com", "due_at": when}, headers=head)  # fmt: skip
    assert_422(resp, ["body", "due_at"])


# --- ?wait ------------------------------------------------------------------------------------------------------


@pytest.fixture
def idle_client(settings: Settings) -> Iterator[TestClient]:
    """No embedded workers: a submission stays queued, so a wait really waits."""
    with TestClient(create_app(settings.model_copy(update={"workers": 0}))) as c:
        yield c


@pytest.mark.shared_app(False)  # the shared app's workers would grade the submission that must stay queued
@pytest.mark.parametrize("database_url", BOTH_DATABASES, indirect=True)
@pytest.mark.parametrize("wait", ["nan", "NaN", "inf", "-inf", "-1", "1e400"])
def test_wait_that_is_not_a_finite_non_negative_number_is_422(  # type: ignore[no-untyped-def]
    idle_client: TestClient, accounts, basic_set, sessions, settings: Settings, wait: str
) -> None:
    alice = accounts["alice"]
    with sessions() as session:
        sub = submit_as(session, settings, alice.id, basic_set, "t1", answers={"b1": "encoder", "b2": "32"})
        session.commit()
        sub_id = sub.id
    body = {"problem_set": basic_set, "problem": "t1", "answers": {"b1": "x", "b2": "1"}}
    resp = idle_client.post("/api/v1/submissions", params={"wait": wait}, headers=alice.headers, json=body)
    assert_422(resp, ["query", "wait"])
    login(idle_client, alice)
    # The page's live fragment (there is no /api/v1 one) answers as pages do: a 422 page, not the JSON shape.
    live = idle_client.get(f"/submissions/{sub_id}/live", params={"wait": wait})
    assert live.status_code == 422 and "not understood" in live.text, live.text[:300]
    assert idle_client.get(f"/submissions/{sub_id}/live", params={"wait": "0"}).headers["x-submission-status"] == (
        "queued"
    )


# --- PATCH with null --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["join_enabled", "title", "time_zone", "ta_can_override"])
def test_null_for_an_offering_field_that_has_a_value_is_422(client: TestClient, world: World, field: str) -> None:  # type: ignore[no-untyped-def]
    head = world.people["b:instructor"].headers
    before = client.get(f"/api/v1/offerings/{world.b}", headers=head).json()
    resp = client.patch(f"/api/v1/offerings/{world.b}", json={field: None}, headers=head)
    assert_422(resp, ["body", field], "null_not_allowed")
    assert client.get(f"/api/v1/offerings/{world.b}", headers=head).json() == before


@pytest.mark.parametrize("database_url", BOTH_DATABASES, indirect=True)
def test_null_still_clears_the_fields_that_can_be_cleared(client: TestClient, world: World) -> None:  # type: ignore[no-untyped-def]
    head = world.people["b:instructor"].headers
    cleared = {"starts_at": None, "ends_at": None, "self_join_until": None, "join_enabled": True}
    resp = client.patch(f"/api/v1/offerings/{world.b}", headers=head, json=cleared)
    assert resp.status_code == 200 and resp.json()["join_enabled"] is True, resp.text
    resp = client.patch(f"/api/v1/assignments/{world.assignment_b}", json={"due_at": None, "max_attempts": None},
                        headers=head)  # fmt: skip
    assert resp.status_code == 200, resp.text
    for field in ("cooldown_s", "counts", "release_scores", "problem_policies"):
        resp = client.patch(f"/api/v1/assignments/{world.assignment_b}", json={field: None}, headers=head)
        assert_422(resp, ["body", field], "null_not_allowed")


# --- roster CSV -------------------------------------------------------------------------------------------------


def _import(client: TestClient, world: World, data: bytes) -> httpx.Response:
    return client.post(f"/api/v1/offerings/{world.b}/roster", params={"apply": "true"},
                       files={"file": ("roster.csv", data, "text/csv")},
                       headers=world.people["b:instructor"].headers)  # fmt: skip


def _members(sessions) -> int:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return int(session.scalar(select(func.count()).select_from(Membership)) or 0)


@pytest.mark.parametrize("size", [131_073, 1_001])
def test_a_roster_field_too_long_is_422_naming_its_line(client: TestClient, world: World, sessions, size: int) -> None:  # type: ignore[no-untyped-def]
    before = _members(sessions)
    data = f"email,name\r\nok@example.com,Ok\r\nlong@example.com,{'x' * size}\r\n".encode()
    body = assert_422(_import(client, world, data), ["body", "file"])
    assert [e["line"] for e in body["errors"]] == [3] and "1000 characters" in body["errors"][0]["msg"]
    assert _members(sessions) == before


def test_a_quoted_field_over_csvs_own_limit_is_422(client: TestClient, world: World, sessions) -> None:  # type: ignore[no-untyped-def]
    data = f'email,name\r\nlong@example.com,"{"x" * 140_000}\r\nmore"\r\n'.encode()
    body = assert_422(_import(client, world, data), ["body", "file"])
    assert body["errors"][0]["line"] >= 2


def test_a_roster_with_a_nul_is_refused_on_every_backend(client: TestClient, world: World, sessions) -> None:  # type: ignore[no-untyped-def]
    before = _members(sessions)
    data = b"email,name\r\nok@example.com,Ok\r\nnul@example.com,Nu\x00l\r\n"
    body = assert_422(_import(client, world, data), ["body", "file"])
    assert [e["line"] for e in body["errors"]] == [3] and "NUL" in body["errors"][0]["msg"]
    assert _members(sessions) == before


def test_a_roster_over_the_byte_bound_is_refused_not_cut() -> None:
    """The request body limit (1 MiB by default) answers first over HTTP; a server configured for larger bodies
    still gets the parser's bound, and the pages' form (which read a prefix of the file) cannot slip past it."""
    row = b"someone@example.com,Some One\r\n"
    with pytest.raises(roster.RosterInvalid) as refused:
        roster.parse(b"email,name\r\n" + row * (MAX_CSV_BYTES // len(row) + 1))
    assert "bytes" in refused.value.extra["errors"][0]["msg"]
