"""Templates and the one helper pages render through (adds the user, the CSRF token and the Markdown filter)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from jinja2 import pass_context
from jinja2.runtime import Context

from app.web import i18n
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
# gettext in the templates ({% trans %}, _(), ngettext()), in the page's language (app/web/i18n.py).
templates.env.add_extension("jinja2.ext.i18n")
templates.env.policies["ext.i18n.trimmed"] = True
templates.env.install_gettext_callables(  # type: ignore[attr-defined]  # added by the i18n extension
    i18n.template_gettext, i18n.template_ngettext, newstyle=True
)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}".rstrip("0").rstrip(".")


@pass_context
def _points(context: Context, value: float | None) -> str:
    # Points may be fractional: the plural form is chosen for 1 or "not 1", as English reads them.
    tr = i18n.translations(context.get("locale") or i18n.DEFAULT_LOCALE)
    return tr.ngettext("%(num)s pt", "%(num)s pts", 1 if value == 1 else 2) % {"num": _score(value)}


templates.env.filters["when"] = i18n.when_filter
templates.env.filters["due"] = i18n.due_filter
templates.env.filters["zone"] = i18n.zone_filter
templates.env.filters["verdict"] = i18n.verdict_filter
templates.env.filters["status"] = i18n.status_filter
templates.env.filters["kind"] = i18n.kind_filter
templates.env.filters["points"] = _points
templates.env.filters["score"] = _score
templates.env.filters["feedback_summary"] = pass_context(
    lambda context, checks: summarize(checks, i18n.translations(context.get("locale") or i18n.DEFAULT_LOCALE))
)


def back_path(request: Request) -> str:
    """Where the language switcher returns to: this page, or for a page that answers a form (a refusal shown at
    the form's POST-only address) the page the form was on, from a same-site Referer; else the home page."""
    if request.method in ("GET", "HEAD"):
        return request.url.path + (f"?{request.url.query}" if request.url.query else "")
    referer = urlsplit(request.headers.get("referer", ""))
    if referer.netloc == request.url.netloc and referer.path.startswith("/"):
        return referer.path + (f"?{referer.query}" if referer.query else "")
    return "/"


templates.env.globals["back_path"] = back_path


def render_fragment(request: Request, template: str, **context: Any) -> str:
    """A part of a page (no layout), for in-place updates."""
    context.setdefault("user", getattr(request.state, "user", None))
    context["csrf_field"] = CSRF_FIELD
    context["csrf_token"] = csrf_token(request)
    context.update(i18n.page_context(request, context["user"]))  # the user the page is for speaks its language
    return templates.get_template(template).render(request=request, **context)


def render(request: Request, template: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    context.setdefault("user", getattr(request.state, "user", None))
    # Staff of some offering (or an admin): the navigation shows the instructor pages (set by web.deps).
    context.setdefault("staff", getattr(request.state, "staff", False))
    context["csrf_field"] = CSRF_FIELD
    context["csrf_token"] = csrf_token(request)
    context.update(i18n.page_context(request, context["user"]))  # the user the page is for speaks its language
    response = templates.TemplateResponse(request, template, context, status_code=status_code)
    # Pages hold a user's answers and a CSRF token: Back after Submit must ask again, not show a stale copy.
    response.headers["Cache-Control"] = "no-store"
    return response
