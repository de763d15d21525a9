"""Templates and the one helper pages render through (adds the user, the CSRF token and the Markdown filter)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates

from app.web.deps import CSRF_FIELD, csrf_token
from app.web.feedback import summarize
from app.web.markdown import render_inline, render_markdown

HERE = Path(__file__).resolve().parent
templates = Jinja2Templates(directory=HERE / "templates")
# Tidy output: block tags do not leave blank lines behind.
templates.env.trim_blocks = True
templates.env.lstrip_blocks = True
templates.env.filters["markdown"] = render_markdown
templates.env.filters["markdown_inline"] = render_inline


def _when(value: datetime | str | None) -> str:
    """UTC timestamps as 'YYYY-MM-DD HH:MM UTC' (pages are server-rendered; no client time zone to guess)."""
    if value is None:
        return ""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


def _points(value: float | None) -> str:
    return f"{_score(value)} pt" if value == 1 else f"{_score(value)} pts"


def _when_in(value: datetime | None, zone: str) -> str:
    """A date in an offering's time zone, with the zone named (and UTC when they differ)."""
    if value is None:
        return "–"
    local = value.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")
    return f"{local} {zone}" if zone == "UTC" else f"{local} {zone} ({_when(value)})"


templates.env.filters["when"] = _when
templates.env.filters["when_in"] = _when_in
templates.env.filters["points"] = _points
templates.env.filters["score"] = _score
templates.env.filters["feedback_summary"] = summarize


def render_fragment(request: Request, template: str, **context: Any) -> str:
    """A part of a page (no layout), for in-place updates."""
    context.setdefault("user", getattr(request.state, "user", None))
    context["csrf_field"] = CSRF_FIELD
    context["csrf_token"] = csrf_token(request)
    return templates.get_template(template).render(request=request, **context)


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("user", getattr(request.state, "user", None))
    # Staff of some offering (or an admin): the navigation shows the instructor pages (set by web.deps).
    context.setdefault("staff", getattr(request.state, "staff", False))
    context["csrf_field"] = CSRF_FIELD
    context["csrf_token"] = csrf_token(request)
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    # Pages hold a user's answers and a CSRF token: Back after Submit must ask again, not show a stale copy.
    response.headers["Cache-Control"] = "no-store"
    return response
