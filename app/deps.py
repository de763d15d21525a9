"""FastAPI dependencies as Annotated aliases: SessionDep, SettingsDep, PrincipalDep, CurrentUser, InstructorUser."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Annotated
from urllib.parse import urlsplit

from fastapi import Depends, Path, Query, Request
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from app.access_log import note
from app.config import Settings
from app.courses.access import Access, access_for
from app.db import session_scope
from app.errors import Forbidden, Unauthorized
from app.users.models import User
from app.users.service import cookie_user, user_for_token


def get_settings_dep(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    with session_scope(request.app.state.session_factory) as session:
        # Kept on the request so a page's WebRoute can roll back when it turns a domain error into an error page:
        # the exception never reaches this generator then, and it would commit whatever was half done.
        request.state.db = session
        yield session


log = logging.getLogger(__name__)

SettingsDep = Annotated[Settings, Depends(get_settings_dep)]
# scope="function": the commit runs before the response is sent, so a commit that fails (the database went away)
# is a 503 to the client, never a 2xx for something not stored, nor a connection dropped after the response.
SessionDep = Annotated[Session, Depends(get_session, scope="function")]

# Row ids are INTEGER columns (32-bit on PostgreSQL): a larger number in a path or a query is a 422 naming the
# parameter, never an OverflowError or "integer out of range" (a 500) from the database driver.
MAX_ROW_ID = 2**31 - 1
RowId = Annotated[int, Path(ge=1, le=MAX_ROW_ID)]
RowIdQuery = Annotated[int | None, Query(ge=1, le=MAX_ROW_ID)]
Offset = Annotated[int, Query(ge=0, le=MAX_ROW_ID)]


class Principal:
    """Who is calling, with which scopes, and their roles per offering (``access``; app.courses.permissions).

    A session cookie carries every scope; a token its own, and may be narrowed to one offering. ``user`` is
    detached from any session: its columns are loaded, nothing else is.
    """

    def __init__(
        self, user: User, scopes: set[str], via_token: bool, access: Access, token_id: int | None = None
    ) -> None:
        self.user, self.scopes, self.via_token, self.access = user, scopes, via_token, access
        self.token_id = token_id  # rate limits count per token as well as per user

    def require(self, scope: str) -> None:
        if scope not in self.scopes:
            raise Forbidden(f"this token lacks the {scope!r} scope")


_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def get_principal(request: Request) -> Principal:
    # A short session of its own: a long ?wait must not hold a pooled connection for the whole request.
    with request.app.state.session_factory() as session:
        principal = _authenticate(request, session)
        try:
            session.commit()  # only a token's or a session's last use (to the minute), if anything
        except OperationalError as exc:
            # Bookkeeping: a locked or busy database must not fail a request that only reads. A request that
            # writes meets the lock again in its own transaction and gets its 503 there.
            session.rollback()  # expires what was loaded: read the user's columns again (a read, not blocked)
            session.refresh(principal.user)
            log.warning("could not record a token's or a session's last use (%s); the request goes on", exc.orig)
    note(request, user_id=principal.user.id, token_id=principal.token_id)
    return principal


def _authenticate(request: Request, session: Session) -> Principal:
    auth = request.headers.get("authorization", "")
    if auth:
        scheme, _, value = auth.partition(" ")
        if scheme.lower() != "bearer" or not value.strip():
            raise Unauthorized("expected 'Authorization: Bearer <token>'")
        found = user_for_token(session, value.strip())
        if found is None:
            raise Unauthorized("invalid, expired or revoked token")
        token_user, token = found
        scopes = set(token.scopes)
        # No autoflush: the token's last_used_at must not be written by these reads, but by get_principal's commit,
        # which gives it up when the database is locked (a read must not fail on that bookkeeping).
        with session.no_autoflush:
            access = access_for(
                session, token_user, staff_scope="instructor" in scopes, only_offering=token.offering_id
            )
        return Principal(token_user, scopes, via_token=True, access=access, token_id=token.id)
    user = cookie_user(session, request.session, touch=True)  # committed by get_principal, or given up
    if user is None:
        raise Unauthorized("log in (POST /api/v1/auth/login) or send an API token")
    if request.method in _UNSAFE:
        _check_origin(request)
    return Principal(user, {"submit", "read", "instructor"}, via_token=False, access=access_for(session, user))


def _check_origin(request: Request) -> None:
    """Cookie-authenticated writes must come from our own pages: browsers send Origin on cross-site requests."""
    origin = request.headers.get("origin")
    if origin and urlsplit(origin).netloc != request.headers.get("host", ""):
        raise Forbidden("cross-origin request refused")


def cross_site(request: Request) -> bool:
    """Whether the browser says this request was started by another site (Sec-Fetch-Site), as a GET from a link
    or a page that navigates by itself is: it carries our SameSite=Lax cookie, so it must not change anything that
    matters (a timed set's clock). Clients that send no such header (API clients, old browsers) are not."""
    return request.headers.get("sec-fetch-site", "").lower() in ("cross-site", "same-site")


PrincipalDep = Annotated[Principal, Depends(get_principal)]


def get_current_user(principal: PrincipalDep) -> User:
    return principal.user


def get_instructor(principal: PrincipalDep) -> User:
    """Staff (instructor or TA) of at least one offering, or an admin; each endpoint then checks the offering."""
    principal.require("instructor")
    if not (principal.access.any_staff or principal.user.is_admin):
        raise Forbidden("instructors only")
    return principal.user


def get_session_user(principal: PrincipalDep) -> User:
    """Logged in through the web session, not a token: tokens cannot mint or revoke tokens."""
    if principal.via_token:
        raise Forbidden("manage tokens from a logged-in session (or `autograder tokens create`), not with a token")
    return principal.user


CurrentUser = Annotated[User, Depends(get_current_user)]
InstructorUser = Annotated[User, Depends(get_instructor)]
SessionUser = Annotated[User, Depends(get_session_user)]
