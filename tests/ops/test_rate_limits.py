"""Rate limits through the real app, with the database limiter and the Redis limiter (both shared by processes)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest
import redis
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from app.config import Settings
from app.main import create_app
from app.ratelimit.counters import RedisCounter
from app.ratelimit.service import Limiter, build_limiter
from app.submissions.models import Submission
from tests.conftest import REDIS_URL, service_missing
from tests.web.conftest import csrf_of

TOKEN_LIMIT, USER_LIMIT, LOGIN_ACCOUNT, LOGIN_ADDRESS = 20, 25, 4, 6
WINDOW_S = 3600
ANSWERS = {"b1": "encoder", "b2": "32"}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    return settings.model_copy(
        update={
            "rate_submissions_per_token": TOKEN_LIMIT,
            "rate_submissions_per_user": USER_LIMIT,
            "rate_submission_window_s": WINDOW_S,
            "rate_logins_per_account": LOGIN_ACCOUNT,
            "rate_logins_per_address": LOGIN_ADDRESS,
            "rate_login_window_s": WINDOW_S,
            "workers": 0,  # nothing needs grading here; only what is stored counts
        }
    )


@pytest.fixture(params=["database", pytest.param("redis", marks=pytest.mark.redis)])
def limiter_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    if request.param == "redis":
        try:
            redis.Redis.from_url(REDIS_URL).ping()
        except redis.RedisError as exc:
            service_missing("Redis", exc)
    yield request.param


def make_app_client(settings: Settings, kind: str, prefix: str) -> TestClient:
    app = create_app(settings)
    if kind == "redis":
        # The limiter a Redis broker gets, on this test's own key prefix (a broker would also start dispatching).
        app.state.limiter.close()
        app.state.limiter = Limiter(settings, RedisCounter(REDIS_URL, prefix=prefix))
    return TestClient(app)


@pytest.fixture
def clients(settings: Settings, limiter_kind: str) -> Iterator[tuple[TestClient, TestClient]]:
    """Two apps on one database (and one Redis): two API processes behind one load balancer."""
    prefix = f"autograder-test:{uuid.uuid4().hex}:"
    with make_app_client(settings, limiter_kind, prefix) as a, make_app_client(settings, limiter_kind, prefix) as b:
        yield a, b
    if limiter_kind == "redis":
        client = redis.Redis.from_url(REDIS_URL)
        for key in client.scan_iter(f"{prefix}*"):
            client.delete(key)


def stored(sessions) -> int:  # type: ignore[no-untyped-def]
    with sessions() as session:
        return int(session.scalar(select(func.count()).select_from(Submission)) or 0)


def test_a_hundred_submissions_in_a_second(clients, accounts, basic_set, sessions) -> None:  # type: ignore[no-untyped-def]
    a, b = clients
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    window_at_start = int(time.time() // WINDOW_S)
    responses = [
        (a if i % 2 else b).post("/api/v1/submissions", json=body, headers=accounts["alice"].headers)
        for i in range(100)
    ]
    same_window = window_at_start == int(time.time() // WINDOW_S)
    accepted = [r for r in responses if r.status_code == 202]
    refused = [r for r in responses if r.status_code == 429]
    assert len(accepted) + len(refused) == 100
    # Both "processes" count into one limit; only a window boundary in the middle of the burst would allow more.
    assert len(accepted) == TOKEN_LIMIT if same_window else TOKEN_LIMIT <= len(accepted) <= 2 * TOKEN_LIMIT
    assert responses[TOKEN_LIMIT].status_code == 429 or not same_window
    for resp in refused:
        assert 1 <= int(resp.headers["retry-after"]) <= WINDOW_S
        (detail,) = resp.json()["detail"]
        assert detail["loc"] == ["limit", "submissions-per-token"] and detail["type"] == "rate_limited"
        assert "submissions-per-token" in detail["msg"] and resp.headers["x-request-id"]
    assert stored(sessions) == len(accepted)  # nothing stored for the refused ones


def test_the_user_limit_holds_across_tokens_and_the_session(clients, accounts, basic_set, sessions) -> None:  # type: ignore[no-untyped-def]
    a, b = clients
    alice = accounts["alice"]
    body = {"problem_set": basic_set, "problem": "t1", "answers": ANSWERS}
    # A second token does not buy more: the per-user limit counts every submission of the account.
    second = b.post("/api/v1/auth/login", json={"email": alice.email, "password": alice.password})
    assert second.status_code == 200
    other_token = b.post("/api/v1/tokens", json={"name": "second"}).json()["token"]
    codes = []
    for i in range(USER_LIMIT + 10):
        headers = alice.headers if i % 2 else {"Authorization": f"Bearer {other_token}"}
        codes.append(a.post("/api/v1/submissions", json=body, headers=headers).status_code)
    assert codes.count(202) <= USER_LIMIT and codes.count(429) >= 10
    refused = a.post("/api/v1/submissions", json=body, headers=alice.headers)
    assert refused.json()["detail"][0]["loc"][1] in ("submissions-per-user", "submissions-per-token")
    assert stored(sessions) == codes.count(202)
    # Another student is not affected.
    assert a.post("/api/v1/submissions", json=body, headers=accounts["bob"].headers).status_code == 202


def test_login_brute_force_gets_429(clients, accounts) -> None:  # type: ignore[no-untyped-def]
    a, b = clients
    alice = accounts["alice"]
    codes = [
        (a if i % 2 else b).post("/api/v1/auth/login", json={"email": alice.email, "password": f"guess-{i}-xx"})
        for i in range(LOGIN_ACCOUNT + 3)
    ]
    assert [r.status_code for r in codes[:LOGIN_ACCOUNT]] == [401] * LOGIN_ACCOUNT
    assert {r.status_code for r in codes[LOGIN_ACCOUNT:]} == {429}
    assert codes[-1].json()["detail"][0]["loc"] == ["limit", "logins-per-account"]
    assert int(codes[-1].headers["retry-after"]) >= 1
    # The right password does not get through either while the account is limited (it is not even checked).
    right = a.post("/api/v1/auth/login", json={"email": alice.email.upper(), "password": alice.password})
    assert right.status_code == 429 and "set-cookie" not in right.headers


def test_login_spraying_from_one_address_gets_429(clients, accounts) -> None:  # type: ignore[no-untyped-def]
    a, _ = clients
    codes = [
        a.post("/api/v1/auth/login", json={"email": f"user{i}@example.com", "password": "password1"}).status_code
        for i in range(LOGIN_ADDRESS + 2)
    ]
    assert codes == [401] * LOGIN_ADDRESS + [429, 429]


def test_limits_off_and_zero_mean_no_limit(settings: Settings, sessions) -> None:  # type: ignore[no-untyped-def]
    for overrides in ({"rate_limits": False}, {"rate_submissions_per_token": 0, "rate_submissions_per_user": 0}):
        limiter = build_limiter(settings.model_copy(update=overrides), sessions)
        for _ in range(TOKEN_LIMIT + USER_LIMIT + 5):
            limiter.submission(user_id=1, token_id=1)


def test_the_login_page_shares_the_limits(clients, accounts) -> None:  # type: ignore[no-untyped-def]
    a, _ = clients
    alice = accounts["alice"]
    statuses = []
    for i in range(LOGIN_ACCOUNT + 1):
        csrf = csrf_of(a.get("/login").text)
        form = {"email": alice.email, "password": f"guess-{i}-xx", "csrf_token": csrf}
        statuses.append(a.post("/login", data=form, follow_redirects=False).status_code)
    assert statuses == [400] * LOGIN_ACCOUNT + [429]
    # The API refuses the account as well: one counter, whichever door is used.
    api = a.post("/api/v1/auth/login", json={"email": alice.email, "password": alice.password})
    assert api.status_code == 429
