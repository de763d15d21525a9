"""WebRoute: the route class of every page. It turns errors into pages instead of the API's JSON."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute

from app.errors import DomainError
from app.web import i18n
from app.web.deps import LoginRequired
from app.web.rendering import render

NOT_UNDERSTOOD = i18n.N_("That address or form was not understood.")


class WebRoute(APIRoute):
    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except LoginRequired:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?next={quote(target)}", status_code=303)
            except DomainError as exc:
                _rollback(request)
                # A message marked with N_ is translated (app.errors: its template and values); others read as made.
                message = i18n.error_text(request, exc)
                return render(request, "error.html", exc.status_code, message=message)
            except RequestValidationError:
                _rollback(request)
                message = i18n.for_request(request).gettext(NOT_UNDERSTOOD)
                return render(request, "error.html", 422, message=message)

        return page_handler


def _rollback(request: Request) -> None:
    session = getattr(request.state, "db", None)
    if session is not None:
        session.rollback()
