"""Ids and offsets are bounded to what the INTEGER id columns hold (32 bits on PostgreSQL): a larger number is a
422 that names the parameter, never a 500 (OverflowError on SQLite, "integer out of range" on PostgreSQL)."""

from __future__ import annotations

import pytest

from tests.web.conftest import login

# Refusals that store nothing: one app per module and backend (tests/conftest.py). Both backends, since each
# refuses a large integer its own way.
pytestmark = pytest.mark.shared_app

HUGE = [2**31, 2**63, 2**64, 10**30]


@pytest.mark.parametrize("value", HUGE)
@pytest.mark.parametrize(
    ("method", "path", "param"),
    [
        ("GET", "/api/v1/submissions/{v}", "submission_id"),
        ("GET", "/api/v1/submissions?offset={v}", "offset"),
        ("GET", "/api/v1/submissions?user_id={v}", "user_id"),
        ("POST", "/api/v1/submissions/{v}/regrade", "submission_id"),
    ],
)
def test_api_refuses_ids_beyond_int64(client, accounts, method, path, param, value):  # type: ignore[no-untyped-def]
    resp = client.request(method, path.format(v=value), headers=accounts["instructor"].headers)
    assert resp.status_code == 422, resp.text
    assert param in str(resp.json()["detail"][0]["loc"])


@pytest.mark.parametrize("value", HUGE)
def test_token_revoke_refuses_ids_beyond_int64(client, accounts, value):  # type: ignore[no-untyped-def]
    login(client, accounts["alice"])
    resp = client.delete(f"/api/v1/tokens/{value}")
    assert resp.status_code == 422 and "token_id" in str(resp.json()["detail"][0]["loc"])


@pytest.mark.parametrize("value", [*HUGE, 0, -1])
def test_pages_refuse_ids_beyond_int64(client, accounts, basic_set, value):  # type: ignore[no-untyped-def]
    login(client, accounts["instructor"])
    page = client.get(f"/submissions/{value}")
    assert page.status_code == 422 and "not understood" in page.text


def test_the_largest_id_is_a_plain_not_found(client, accounts):  # type: ignore[no-untyped-def]
    resp = client.get(f"/api/v1/submissions/{2**31 - 1}", headers=accounts["alice"].headers)
    assert resp.status_code == 404


@pytest.mark.parametrize("value", HUGE)
def test_manual_grade_refuses_ids_beyond_int64(client, accounts, value):  # type: ignore[no-untyped-def]
    resp = client.post(f"/api/v1/submissions/{value}/manual-grade", json={"manual_score": 1, "feedback": ""},
                       headers=accounts["instructor"].headers)  # fmt: skip
    assert resp.status_code == 422 and "submission_id" in str(resp.json()["detail"][0]["loc"])
