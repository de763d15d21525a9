"""The pages' language and time zone: gettext catalogs (Babel), the viewer's choice, dates in the viewer's zone.

Language: the logged-in user's account setting (the account page, or the switcher while logged in), else the
``lang`` cookie (set by the switcher in the navigation), else the browser's ``Accept-Language``, else English.
The source strings are English; ``locale/<code>/LC_MESSAGES/messages.po`` holds each translation and is compiled
in memory when first used (no .mo file to forget to rebuild; a catalog that does not compile fails the first page
and ``tests/web/test_i18n.py``). ``make i18n`` extracts the strings and updates the catalogs.

Time zone: the ``tz`` cookie (an IANA name the page's script reads from the browser), else the zone of the
offering a date belongs to, else UTC; every date names its zone.
"""

from __future__ import annotations

import functools
import gettext as gettext_module
import io
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo, available_timezones

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po
from fastapi import Request
from jinja2 import pass_context
from jinja2.runtime import Context

from app.courses.policy import InvalidFormat, TooManyAttempts
from app.errors import N_, DomainError
from app.users.models import LOCALES, User

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "messages"
DEFAULT_LOCALE = "en"
# Each language by its code (gettext's form; the ones an account may store, app.users.models.LOCALES) and its own
# name, as the switcher shows it. A code added there without a name here fails at import.
_NAMES = {"en": "English", "zh_CN": "中文"}
LANGUAGES = {code: _NAMES[code] for code in LOCALES}
LANG_COOKIE = "lang"
TZ_COOKIE = "tz"
_MAX_HEADER = 512  # an Accept-Language longer than this is read up to here


class CatalogError(Exception):
    """A catalog with an error gettext would trip over (a placeholder the translation lacks, a bad plural)."""


def compile_catalog(po_path: Path) -> gettext_module.GNUTranslations:
    """The .po file compiled as gettext reads it; fuzzy entries are left out, as msgfmt does."""
    with po_path.open("rb") as f:
        catalog = read_po(f)
    problems = [f"{message.id!r}: {'; '.join(str(e) for e in errors)}" for message, errors in catalog.check()]
    if problems:
        raise CatalogError(f"{po_path.name} ({catalog.locale}): " + " | ".join(problems))
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    buffer.seek(0)
    return gettext_module.GNUTranslations(buffer)


@functools.cache
def translations(locale: str) -> gettext_module.NullTranslations:
    if locale not in LANGUAGES or locale == DEFAULT_LOCALE:
        return gettext_module.NullTranslations()
    return compile_catalog(LOCALE_DIR / locale / "LC_MESSAGES" / f"{DOMAIN}.po")


def negotiate(accept_language: str) -> str:
    """The best of LANGUAGES for an Accept-Language header (zh-TW or zh get zh_CN rather than English)."""
    wanted: list[tuple[float, int, str]] = []
    for index, item in enumerate(accept_language[:_MAX_HEADER].split(",")):
        tag, _, params = item.strip().partition(";")
        quality = 1.0
        if params.strip().startswith("q="):
            try:
                quality = float(params.strip()[2:])
            except ValueError:
                quality = 0.0
        if tag and quality > 0:
            wanted.append((-quality, index, tag.strip().replace("-", "_").lower()))
    by_lower = {code.lower(): code for code in LANGUAGES}
    for _, _, tag in sorted(wanted):
        if tag in by_lower:
            return by_lower[tag]
        base = tag.split("_")[0]
        for lower, code in by_lower.items():
            if lower.split("_")[0] == base:
                return code
    return DEFAULT_LOCALE


def choose_locale(request: Request, user: User | None = None) -> str:
    """The account's language, else the switcher's cookie, else the browser's Accept-Language.

    The account is ``user`` (the one a page renders for), else the user the page's dependencies loaded
    (app.web.deps.optional_user keeps it on request.state): no query of its own. Nobody logged in, or a page that
    loads no user: as to anyone on this browser.
    """
    user = user if user is not None else getattr(request.state, "user", None)
    stored = getattr(user, "locale", None)
    if stored in LANGUAGES:
        return str(stored)
    chosen = request.cookies.get(LANG_COOKIE)
    if chosen in LANGUAGES:
        return chosen
    return negotiate(request.headers.get("accept-language", ""))


def html_lang(locale: str) -> str:
    """The BCP 47 tag for <html lang>: zh_CN -> zh-CN."""
    return locale.replace("_", "-")


@functools.cache
def known_zones() -> frozenset[str]:
    return frozenset(available_timezones())


def viewer_zone(request: Request) -> str | None:
    """The zone the viewer's browser reported (only a name the zone database has; anything else is ignored)."""
    raw = request.cookies.get(TZ_COOKIE, "")
    return raw if raw in known_zones() else None


def page_context(request: Request, user: User | None = None) -> dict[str, Any]:
    """What every template needs to translate and to show dates: set by rendering.render for each page."""
    locale = choose_locale(request, user)
    return {
        "locale": locale,
        "html_lang": html_lang(locale),
        "languages": LANGUAGES,
        "viewer_zone": viewer_zone(request),
        "script_messages": script_messages(locale),
    }


def for_request(request: Request) -> gettext_module.NullTranslations:
    """The translations of this request's language, for messages made in Python (errors, verdicts)."""
    return translations(choose_locale(request))


# --- the callables Jinja's i18n extension calls ({% trans %}, _(), ngettext()) ---------------------------------


def _of(context: Context) -> gettext_module.NullTranslations:
    return translations(context.get("locale") or DEFAULT_LOCALE)


@pass_context
def template_gettext(context: Context, message: str) -> str:
    return _of(context).gettext(message)


@pass_context
def template_ngettext(context: Context, singular: str, plural: str, n: int) -> str:
    return _of(context).ngettext(singular, plural, n)


# --- dates ---------------------------------------------------------------------------------------------------


def _aware(value: datetime | str) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def shown_zone(context: Context, fallback: str | None) -> str:
    """The page's own zone when it sets one (a form that reads its dates in the offering's zone shows every date of
    the page in it), else the viewer's zone if the browser told it, else the date's own offering's zone, else UTC."""
    zone = context.get("page_zone") or context.get("viewer_zone") or fallback or "UTC"
    return zone if zone in known_zones() or zone == "UTC" else "UTC"


@pass_context
def zone_filter(context: Context, fallback: str | None = None) -> str:
    """``{{ offering.time_zone|zone }}``: the zone this page shows its dates in, for the line that names it."""
    return shown_zone(context, fallback)


def format_when(value: datetime | str | None, zone: str) -> str:
    """'2026-12-01 23:59 Asia/Shanghai': the absolute time in a zone, named."""
    if value is None:
        return ""
    return f"{_aware(value).astimezone(ZoneInfo(zone)).strftime('%Y-%m-%d %H:%M')} {zone}"


def relative(value: datetime | str, now: datetime, tr: gettext_module.NullTranslations) -> str:
    """'in 2 days', '3 hours ago', '2 天后': whole units rounded down (minutes under an hour, hours under 2 days)."""
    seconds = (_aware(value) - now).total_seconds()
    ahead = seconds >= 0
    seconds = abs(seconds)
    if seconds < 60:
        return tr.gettext("in less than a minute") if ahead else tr.gettext("less than a minute ago")
    if seconds < 3600:
        n = int(seconds // 60)
        text = (
            tr.ngettext("in %(num)d minute", "in %(num)d minutes", n)
            if ahead
            else tr.ngettext("%(num)d minute ago", "%(num)d minutes ago", n)
        )
    elif seconds < 2 * 86400:
        n = int(seconds // 3600)
        text = (
            tr.ngettext("in %(num)d hour", "in %(num)d hours", n)
            if ahead
            else tr.ngettext("%(num)d hour ago", "%(num)d hours ago", n)
        )
    else:
        n = int(seconds // 86400)
        text = (
            tr.ngettext("in %(num)d day", "in %(num)d days", n)
            if ahead
            else tr.ngettext("%(num)d day ago", "%(num)d days ago", n)
        )
    return text % {"num": n}


@pass_context
def when_filter(context: Context, value: datetime | str | None, zone: str | None = None) -> str:
    """``{{ date|when }}`` or ``{{ date|when(offering_zone) }}``: in the viewer's zone, the zone named."""
    return format_when(value, shown_zone(context, zone))


@pass_context
def due_filter(context: Context, value: datetime | str | None, zone: str | None = None) -> str:
    """``{{ due|due(zone) }}``: the absolute time and, beside it, how far off it is ('in 2 days')."""
    if value is None:
        return ""
    shown = format_when(value, shown_zone(context, zone))
    return f"{shown} ({relative(value, datetime.now(UTC), _of(context))})"


# --- words and messages made in Python, said in the viewer's language -----------------------------------------

# A grade's verdict and a submission's status as the pages name them (the stored values stay English codes).
VERDICTS = {
    "accepted": N_("accepted"),
    "partial": N_("partial"),
    "wrong_answer": N_("wrong answer"),
    "pending_manual": N_("awaiting hand grading"),
    "runtime_error": N_("runtime error"),
    "timeout": N_("timeout"),
    "memory_limit": N_("memory limit"),
    "output_limit": N_("output limit"),
    "syntax_error": N_("syntax error"),
    "missing_function": N_("missing function"),
    "bad_return_type": N_("bad return type"),
    "internal_error": N_("internal error"),
}
STATUSES = {"queued": N_("queued"), "running": N_("running"), "graded": N_("graded"), "error": N_("error")}
KINDS = {"fill_in": N_("fill-in"), "choice": N_("choice"), "code": N_("code"), "manual": N_("by hand")}
# The page script's words (static/app.js), handed to it translated in a JSON block of base.html; "{name}" stays.
SCRIPT_MESSAGES = (
    N_("formula (scrolls sideways)"),
    N_("read as:"),
    N_("cannot read this yet:"),
    N_("bytes"),
    N_("characters"),
    N_("Graded:"),
    N_("Grading now."),
    N_("Grading failed."),
    N_("The file {name} will be sent; the text box is set aside."),
)


@functools.cache
def script_messages(locale: str) -> dict[str, str]:
    tr = translations(locale)
    return {message: tr.gettext(message) for message in SCRIPT_MESSAGES}


@pass_context
def kind_filter(context: Context, value: str) -> str:
    return _of(context).gettext(KINDS[value]) if value in KINDS else value.replace("_", "-")


@pass_context
def verdict_filter(context: Context, value: str | None) -> str:
    if not value:
        return ""
    return _of(context).gettext(VERDICTS[value]) if value in VERDICTS else value.replace("_", " ")


@pass_context
def status_filter(context: Context, value: str | None) -> str:
    if not value:
        return ""
    return _of(context).gettext(STATUSES[value]) if value in STATUSES else value


def refusal_message(request: Request, exc: Exception, *, zone: str | None = None) -> str:
    """The set page's message for a refused answer (malformed, no attempts left, cooldown), translated.

    ``zone`` is the offering's, for the time of the next attempt when the browser has not told its own.
    """
    tr = for_request(request)
    if isinstance(exc, InvalidFormat):
        reasons = exc.extra.get("invalid_parts") or {}
        text = "; ".join(f"{part}: {reason}" for part, reason in reasons.items())
        return tr.gettext("invalid format: not counted (%(reasons)s)") % {"reasons": text}
    if isinstance(exc, TooManyAttempts):
        if exc.next_attempt_at is not None:
            ready = exc.next_attempt_at
            shown = format_when(ready, viewer_zone(request) or zone or "UTC")
            return tr.gettext("wait before the next attempt at %(problem)s: possible at %(when)s (%(relative)s)") % {
                "problem": exc.problem_id,
                "when": shown,
                "relative": relative(ready, datetime.now(UTC), tr),
            }
        if exc.max_attempts is not None:
            n = exc.max_attempts
            return tr.ngettext(
                "no attempts left at %(problem)s: its %(num)d attempt is used",
                "no attempts left at %(problem)s: all %(num)d are used",
                n,
            ) % {"problem": exc.problem_id, "num": n}
    return error_text(request, exc, zone=zone) if isinstance(exc, DomainError) else str(exc)


def error_text(request: Request, exc: DomainError, *, zone: str | None = None) -> str:
    """A domain error's message in the viewer's language: its template through the catalog, filled in with its
    values (a datetime in the viewer's zone, else ``zone``, else UTC). A template the catalog lacks reads as the
    API's English message."""
    translated = for_request(request).gettext(exc.template)
    if not exc.params:
        return translated
    shown_in = viewer_zone(request) or zone or "UTC"
    values = {k: format_when(v, shown_in) if isinstance(v, datetime) else v for k, v in exc.params.items()}
    return translated % values


def catalog_problems() -> list[str]:
    """What `make i18n` and the tests refuse: a catalog that does not compile, or a message left untranslated."""
    problems = []
    for locale in LANGUAGES:
        if locale == DEFAULT_LOCALE:
            continue
        po_path = LOCALE_DIR / locale / "LC_MESSAGES" / f"{DOMAIN}.po"
        try:
            compile_catalog(po_path)
        except (CatalogError, OSError, ValueError) as exc:
            problems.append(str(exc))
            continue
        with po_path.open("rb") as f:
            catalog = read_po(f)
        for message in catalog:
            if not message.id:
                continue
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            if message.fuzzy or not all(strings):
                state = "fuzzy" if message.fuzzy else "untranslated"
                problems.append(f"{locale}: {state}: {message.id!r}")
    return problems


if __name__ == "__main__":  # `make i18n` ends with this check
    import sys

    found = catalog_problems()
    print("\n".join(found) or f"catalogs compile, every message translated ({', '.join(LANGUAGES)})")
    sys.exit(1 if found else 0)
