"""PostgreSQL time bounds (app.db.make_engine): a server that never answers cannot hang a request, and a statement
of the service that waits too long is cancelled; both are a 503 in the one error shape.

The "blackholed" server is a listening socket on 127.0.0.1 that accepts nothing: the kernel completes the TCP
handshake and takes psycopg's startup message, and no answer ever comes (as with a server whose packets are
dropped). Each request runs in a thread the test waits for with a generous bound: a hang fails there.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from app.config import Settings
from app.db import database_unavailable, make_engine
from app.main import create_app

BOUND_S = 60.0  # far above the bounds under test (2 s); only a hang reaches it


@pytest.fixture
def blackhole() -> Iterator[int]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)  # never accept()ed, never read
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


def answered_within_bound(client: TestClient, method: str, path: str, **kwargs: Any) -> httpx.Response:
    out: list[httpx.Response] = []
    thread = threading.Thread(target=lambda: out.append(client.request(method, path, **kwargs)), daemon=True)
    thread.start()
    thread.join(BOUND_S)
    assert out, f"{method} {path} hung on the database"
    return out[0]


def assert_database_503(resp: httpx.Response) -> None:
    assert resp.status_code == 503, resp.text
    assert int(resp.headers["Retry-After"]) > 0
    error = resp.json()
    assert error["detail"][0]["type"] == "service_unavailable" and error["request_id"], error
    assert "database" in error["detail"][0]["msg"], error


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # replaced by the blackhole's
def test_a_blackholed_database_is_a_503_not_a_hang(settings: Settings, blackhole: int) -> None:
    url = f"postgresql+psycopg://postgres@127.0.0.1:{blackhole}/nothing"
    unanswered = settings.model_copy(update={"database_url": url, "database_connect_timeout_s": 2, "workers": 0})
    with TestClient(create_app(unanswered)) as client:
        me = answered_within_bound(client, "GET", "/api/v1/auth/me", headers={"Authorization": "Bearer agt_x"})
        assert_database_503(me)
        login = answered_within_bound(
            client, "POST", "/api/v1/auth/login", json={"email": "a@example.com", "password": "whatever-1"}
        )
        assert_database_503(login)


def test_the_connect_timeout_bounds_a_bare_engine_too(blackhole: int) -> None:
    # Every engine (the CLI's, the migrations') has the bound, not only the served app's.
    engine = make_engine(f"postgresql+psycopg://postgres@127.0.0.1:{blackhole}/nothing", connect_timeout_s=2)
    errors: list[BaseException] = []

    def connect() -> None:
        try:
            with engine.connect():
                pass
        except OperationalError as exc:
            errors.append(exc)

    thread = threading.Thread(target=connect, daemon=True)
    thread.start()
    thread.join(BOUND_S)
    engine.dispose()
    assert errors and database_unavailable(errors[0]), errors


@pytest.mark.postgres
@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
def test_a_request_waiting_on_a_lock_past_the_statement_timeout_is_a_503(settings: Settings) -> None:
    bounded = settings.model_copy(update={"database_statement_timeout_s": 1.0, "workers": 0})
    app = create_app(bounded)
    with app.state.engine.connect() as conn:
        assert conn.execute(text("SHOW statement_timeout")).scalar_one() == "1s"
    locker = make_engine(settings.resolved_database_url)  # no timeout: the test's own connection holds the lock
    try:
        with TestClient(app) as client, locker.connect() as held:
            held.execute(text("LOCK TABLE api_token IN ACCESS EXCLUSIVE MODE"))  # until the rollback below
            me = answered_within_bound(client, "GET", "/api/v1/auth/me", headers={"Authorization": "Bearer agt_x"})
            held.rollback()
            assert_database_503(me)
            # The lock gone, the same request gets its ordinary answer.
            assert client.get("/api/v1/auth/me", headers={"Authorization": "Bearer agt_x"}).status_code == 401
    finally:
        locker.dispose()
