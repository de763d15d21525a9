"""The viewer's language: the switcher in the navigation sets a cookie and, for a logged-in user, the account.

Logged out, the switcher is plain links (GET, works without JS) that set only the ``lang`` cookie: a link from any
site may follow them, and they change nothing but this browser's words. Logged in, it is a small form per language
(POST with the CSRF token) that also stores the choice on the account (app.users.service.set_locale): a GET that
wrote account state could be sent with our SameSite=Lax cookie by any other site's link.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import RedirectResponse

from app.errors import NotFound
from app.users import service as users
from app.web.auth import _safe_next
from app.web.deps import CheckedForm, MaybeUser, WebSession
from app.web.i18n import LANG_COOKIE, LANGUAGES
from app.web.page_route import WebRoute

router = APIRouter(route_class=WebRoute)
YEAR_S = 365 * 86400


def set_language_cookie(response: Response, code: str | None) -> None:
    """The browser's own choice (kept after logout); None forgets it, so that the browser's header decides again."""
    if code is None:
        response.delete_cookie(LANG_COOKIE, httponly=True, samesite="lax")
    else:
        response.set_cookie(LANG_COOKIE, code, max_age=YEAR_S, httponly=True, samesite="lax")


def _known(code: str) -> str:
    if code not in LANGUAGES:
        raise NotFound(f"No translation for {code[:20]!r}; the pages come in {', '.join(LANGUAGES)}.")
    return code


@router.get("/language/{code}")
def choose_language(code: str, next: str = "/") -> Response:
    """Show the pages in ``code`` (en, zh_CN) on this browser (an account's own setting still wins), and go back."""
    response = RedirectResponse(_safe_next(next), status_code=303)
    set_language_cookie(response, _known(code))
    return response


@router.post("/language/{code}")
def store_language(code: str, form: CheckedForm, user: MaybeUser, session: WebSession) -> Response:
    """The switcher while logged in: show the pages in ``code`` on this browser and store it on the account."""
    _known(code)
    if user is not None:  # a session that ended meanwhile still gets the cookie
        users.set_locale(session, user_id=user.id, locale=code)
        session.commit()
    response = RedirectResponse(_safe_next(form.get("next")), status_code=303)
    set_language_cookie(response, code)
    return response
