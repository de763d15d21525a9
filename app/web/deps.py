"""Dependencies of the web pages: a DB session, the logged-in user (or a redirect to /login), CSRF-checked forms."""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, Request
from starlette.datastructures import FormData

from app.courses.access import access_for
from app.deps import SessionDep, SettingsDep
from app.errors import DomainError, Forbidden, Invalid
from app.users import login_sessions
from app.users.models import User
from app.web.i18n import N_
from graders.input_limits import NUL, NUL_MESSAGE

CSRF_FIELD = "csrf_token"
_CSRF_KEY = "csrf"


class LoginRequired(Exception):
    """Raised by page dependencies when nobody is logged in; pages answer with a redirect to /login."""


class CsrfFailed(DomainError):
    status_code = 403


# N_: the pages show it translated (app.web.page_route looks the message up in the catalog).
CSRF_MESSAGE = N_("This form has expired or did not come from this site. Go back, reload the page and try again.")


# The pages use the API's session and settings dependencies (app/deps.py); only who is logged in differs: a page
# without a login redirects to /login instead of answering 401.
WebSession = SessionDep
WebSettings = SettingsDep


def optional_user(request: Request, session: WebSession) -> User | None:
    found = login_sessions.find(session, request.session)  # one query, the user with it
    if found is None:
        return None
    login_sessions.touch_apart(request.app.state.session_factory, found)
    user = found.user
    request.state.user = user  # for the navigation bar of error pages
    request.state.staff = user.is_admin or access_for(session, user).any_staff
    return user


def require_user(user: Annotated[User | None, Depends(optional_user)]) -> User:
    if user is None:
        raise LoginRequired
    return user


def require_instructor(user: Annotated[User, Depends(require_user)], session: WebSession) -> User:
    """Staff of at least one offering (or an admin); each page then checks the offering it shows."""
    if not (user.is_admin or access_for(session, user).any_staff):
        raise Forbidden("This page is for instructors.")
    return user


def require_gradebook_reader(user: Annotated[User, Depends(require_user)], session: WebSession) -> User:
    """Reads the gradebook of at least one offering (staff and observers); the page checks the offering it shows."""
    if not (user.is_admin or access_for(session, user).any_gradebook):
        raise Forbidden("This page is for instructors, TAs and observers of an offering.")
    return user


MaybeUser = Annotated[User | None, Depends(optional_user)]
WebUser = Annotated[User, Depends(require_user)]
WebInstructor = Annotated[User, Depends(require_instructor)]
WebGradebookReader = Annotated[User, Depends(require_gradebook_reader)]


def csrf_token(request: Request) -> str:
    """This session's CSRF token, created on first use (the session cookie is signed, so it cannot be forged)."""
    token = request.session.get(_CSRF_KEY)
    if not isinstance(token, str) or not token:
        token = request.session[_CSRF_KEY] = secrets.token_urlsafe(32)
    return token


def rotate_csrf(request: Request) -> None:
    request.session[_CSRF_KEY] = secrets.token_urlsafe(32)


async def checked_form(request: Request) -> FormData:
    """The POSTed form, once its CSRF token matches the session's (SameSite=lax alone misses same-site attackers)."""
    form = await request.form()
    sent = form.get(CSRF_FIELD)
    expected = request.session.get(_CSRF_KEY)
    if not isinstance(sent, str) or not isinstance(expected, str) or not secrets.compare_digest(sent, expected):
        raise CsrfFailed(CSRF_MESSAGE)
    for name, value in form.multi_items():  # PostgreSQL cannot store NUL: refused here, as the API's schemas do
        if isinstance(value, str) and NUL in value:
            raise Invalid(f"{name[:64]} {NUL_MESSAGE}", field=name[:64])
    return form


CheckedForm = Annotated[FormData, Depends(checked_form)]


def limit_unauthenticated(request: Request) -> None:
    """The per-address limit of the pages anyone may call (a 429 before any work): invitation links, LTI login."""
    request.app.state.limiter.unauthenticated(address=request.client.host if request.client else "-")


LimitUnauthenticated = Depends(limit_unauthenticated)
