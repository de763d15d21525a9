"""Log in and out: the signed session cookie holds the key of a server-side session (app.users.login_sessions)."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import RedirectResponse

from app.users.password_checks import password_checks
from app.users.service import log_out
from app.web import i18n
from app.web.deps import CheckedForm, MaybeUser, WebSession, rotate_csrf
from app.web.page_route import WebRoute
from app.web.rendering import render

router = APIRouter(route_class=WebRoute)


def _safe_next(target: object) -> str:
    # Only paths on this site: "//evil.example" or "https://..." would turn the login into an open redirect, and so
    # would "/<tab>/evil.example": browsers drop tabs and newlines from a Location before they read it.
    if not isinstance(target, str) or any(ord(c) < 0x20 or c == "\x7f" for c in target):
        return "/"
    if target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/"


@router.get("/login")
def login_page(request: Request, user: MaybeUser, next: str = "/") -> Response:
    """The login form (already logged-in users go straight on)."""
    if user is not None:
        return RedirectResponse(_safe_next(next), status_code=303)
    return render(request, "login.html", next=_safe_next(next))


@router.post("/login")
async def login(request: Request, form: CheckedForm) -> Response:
    """Check the password; on success start a fresh session and go on to the page asked for."""
    email, password = str(form.get("email") or ""), str(form.get("password") or "")
    target = _safe_next(form.get("next"))
    # The API's limits (a 429 page here): the form is no way around them.
    address = request.client.host if request.client else "-"
    checks = password_checks(request)
    await checks.in_login_thread(request.app.state.limiter.login, email=email, address=address)
    # The API's queue too: a turn for the hash only, waited for on the event loop (app.users.password_checks).
    user = await checks.log_in(
        request,
        request.app.state.session_factory,
        request.session,
        email=email,
        password=password,
        lifetime_s=request.app.state.settings.session_max_age_s,
    )
    if user is None:
        error = i18n.for_request(request).gettext("Wrong email or password.")
        return render(request, "login.html", 400, next=target, email=email, error=error)
    rotate_csrf(request)  # a new CSRF token with the new session
    return RedirectResponse(target, status_code=303)


@router.get("/logout")
def logout_page(request: Request, user: MaybeUser) -> Response:
    """A confirm button: logging out changes state, so it is a POST with a CSRF token."""
    if user is None:
        return RedirectResponse("/login", status_code=303)
    return render(request, "logout.html")


@router.post("/logout")
def logout(request: Request, form: CheckedForm, session: WebSession) -> Response:
    """End the session, on the server too: a copy of the cookie no longer logs anyone in."""
    log_out(session, request.session)
    return RedirectResponse("/login", status_code=303)
