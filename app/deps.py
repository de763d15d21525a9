"""FastAPI dependencies as Annotated aliases: SessionDep, SettingsDep, CurrentUser, InstructorUser."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated

from fastapi import Depends, Request
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import Forbidden, Unauthorized
from app.users.models import User
from app.users.service import user_for_token


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    session: Session = request.app.state.session_factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()


SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
SessionDep = Annotated[Session, Depends(get_session)]


class Principal:
    """Who is calling, and with which scopes (a session cookie carries every scope of the user's role)."""

    def __init__(self, user: User, scopes: set[str], via_token: bool) -> None:
        self.user, self.scopes, self.via_token = user, scopes, via_token

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise Forbidden(f"this token lacks the {scope!r} scope")


def get_principal(request: Request, session: SessionDep) -> Principal:
    auth = request.headers.get("authorization", "")
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("expected 'Authorization: Bearer <token>'")
        found = user_for_token(session, value.strip())
        if found is None:
            raise Unauthorized("invalid, expired or revoked token")
        user, token = found
        return Principal(user, set(token.scopes), via_token=True)
    user_id = request.session.get("user_id")
    cookie_user = session.get(User, user_id) if isinstance(user_id, int) else None
    if cookie_user is None or not cookie_user.is_active:
        raise Unauthorized("log in (POST /api/v1/auth/login) or send an API token")
    scopes = {"submit", "read"} | ({"instructor"} if cookie_user.is_staff else set())
    return Principal(cookie_user, scopes, via_token=False)


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def get_current_user(principal: PrincipalDep) -> User:
    return principal.user


def get_instructor(principal: PrincipalDep) -> User:
    if not principal.user.is_staff:
        raise Forbidden("instructors only")
    principal.require("instructor")
    return principal.user


CurrentUser = Annotated[User, Depends(get_current_user)]
InstructorUser = Annotated[User, Depends(get_instructor)]
