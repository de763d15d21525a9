"""App-level fixtures: the real app (embedded workers running), accounts, tokens and a loaded test set; and a
submission made through the service, for the tests that drive the workers themselves."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from app.config import Settings
from app.courses import accounts as account_service
from app.courses import course_sets
from app.courses.access import access_for
from app.main import create_app
from app.submissions import service as submissions
from app.submissions.models import Status, Submission
from app.users.models import Role, User
from tests.conftest import FIXTURE_SETS, shares_app


@dataclass
class Account:
    id: int
    email: str
    password: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture
def accounts(sessions) -> dict[str, Account]:  # type: ignore[no-untyped-def]
    out = {}
    with sessions() as session:
        for key, role in (("instructor", Role.INSTRUCTOR), ("alice", Role.STUDENT), ("bob", Role.STUDENT)):
            user, password = account_service.create_user(session, email=f"{key}@example.com", role=role)
            scopes = ["submit", "read", "instructor"] if role == Role.INSTRUCTOR else None
            _, token = account_service.create_token(session, user=user, name="test", scopes=scopes)
            out[key] = Account(user.id, user.email, password, token)
        session.commit()
    return out


@pytest.fixture
def basic_set(sessions) -> str:  # type: ignore[no-untyped-def]
    with sessions() as session:
        course_sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        session.commit()
    return "basic"


@pytest.fixture
def client(request: pytest.FixtureRequest, settings: Settings) -> Iterator[TestClient]:
    if shares_app(request):  # the module's one app on this backend, built by its first test (tests/conftest.py)
        shared = request.getfixturevalue("shared_apps")
        backend = shared.backend_of(settings.database_url)
        if backend not in shared.clients:
            shared.clients[backend] = TestClient(create_app(settings)).__enter__()
        test_client = shared.clients[backend]
        test_client.cookies.clear()
        yield test_client
        _wait_idle(test_client)
        return
    with TestClient(create_app(settings)) as test_client:
        yield test_client


def _wait_idle(client: TestClient) -> None:
    """A shared app's workers finish what the test queued, before the next test's set-up deletes the rows (a job
    still running then would write into the next test's rows, whose ids start at 1 again)."""
    busy = select(func.count()).select_from(Submission).where(Submission.status.in_([Status.QUEUED, Status.RUNNING]))
    deadline = time.monotonic() + 60  # bounds a hung grading; measures nothing
    while True:
        with client.app.state.session_factory() as session:  # type: ignore[attr-defined]
            if not session.scalar(busy):
                return
        if time.monotonic() > deadline:
            raise AssertionError("a submission still queued or grading after the test: its module cannot share an app")
        time.sleep(0.02)


def submit_as(
    session: Session, settings: Settings, user_id: int, problem_set: str, problem_id: str, **payload: Any
) -> Submission:
    """The user's submission, stored queued by the service as the API stores it (with the user's own access), in
    ``session``; ``payload`` is answers= or code= and any other keyword of app.submissions.service.create."""
    user = session.get(User, user_id)
    assert user is not None
    sub, _ = submissions.create(session, settings=settings, user=user, access=access_for(session, user),
                                problem_set=problem_set, problem_id=problem_id, **payload)  # fmt: skip
    return sub
