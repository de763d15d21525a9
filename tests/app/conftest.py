"""App-level fixtures: the real app (embedded workers running), accounts, tokens and a loaded test set."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from app.config import Settings
from app.main import create_app
from app.problemsets import service as sets
from app.users import service as users
from app.users.models import Role
from tests.conftest import FIXTURE_SETS


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
            user, password = users.create_user(session, email=f"{key}@example.com", role=role)
            scopes = ["submit", "read", "instructor"] if role == Role.INSTRUCTOR else None
            _, token = users.create_token(session, user=user, name="test", scopes=scopes)
            out[key] = Account(user.id, user.email, password, token)
        session.commit()
    return out


@pytest.fixture
def basic_set(sessions) -> str:  # type: ignore[no-untyped-def]
    with sessions() as session:
        sets.load_dir(session, root=FIXTURE_SETS / "basic", grader=None)
        session.commit()
    return "basic"


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    with TestClient(create_app(settings)) as test_client:
        yield test_client
