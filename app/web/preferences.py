"""The viewer's language: a cookie set by the switcher in the navigation (no account needed, works without JS)."""

from __future__ import annotations

from fastapi import APIRouter, Response
from fastapi.responses import RedirectResponse

from app.errors import NotFound
from app.web.auth import _safe_next
from app.web.i18n import LANG_COOKIE, LANGUAGES
from app.web.page_route import WebRoute

router = APIRouter(route_class=WebRoute)
YEAR_S = 365 * 86400


@router.get("/language/{code}")
def choose_language(code: str, next: str = "/") -> Response:
    """Show the pages in ``code`` (en, zh_CN) from now on, and go back to the page the switcher was on."""
    if code not in LANGUAGES:
        raise NotFound(f"No translation for {code[:20]!r}; the pages come in {', '.join(LANGUAGES)}.")
    response = RedirectResponse(_safe_next(next), status_code=303)
    response.set_cookie(LANG_COOKIE, code, max_age=YEAR_S, httponly=True, samesite="lax")
    return response
