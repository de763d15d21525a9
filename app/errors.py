"""Domain errors raised by services; app.error_format turns them into the one JSON error shape.

``field`` names the input at fault and ``location`` where it came from (body, query, path or header), so the
response's ``loc`` is ``[location, field]`` (``[location]`` for ``field=""``: the whole body is at fault, and
``[]`` without a field); ``type`` is the stable code a client can branch on.

A message the pages show in the viewer's language is marked with ``N_`` and written as a template with
``%(name)s`` placeholders, its values in ``params``: ``Conflict(N_("pinned to version %(version)s"),
params={"version": 3})``. The API answers the English ``message``; a page translates ``template`` through its
catalog and fills in the same values (app.web.i18n.error_text, which also shows a datetime in the viewer's zone).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any


def N_(message: str) -> str:
    """Marks a message for the pages' catalogs (gettext's convention: ``make i18n`` extracts it); a page translates
    it where it shows it."""
    return message


def english(value: object) -> str:
    """A template value as the API's English message writes it (a datetime: minutes, in UTC)."""
    if isinstance(value, datetime):
        return f"{value.astimezone(UTC):%Y-%m-%d %H:%M} UTC"
    return str(value)


class DomainError(Exception):
    status_code = 400
    type = "bad_request"

    def __init__(
        self, message: str, *, field: str | None = None, extra: dict[str, Any] | None = None, location: str = "body",
        params: Mapping[str, object] | None = None,
    ) -> None:  # fmt: skip
        self.template = message
        self.params = dict(params or {})
        if self.params:
            message = message % {name: english(value) for name, value in self.params.items()}
        super().__init__(message)
        self.message = message
        self.field = field
        self.location = location
        self.extra = extra or {}


class NotFound(DomainError):
    status_code = 404
    type = "not_found"


class Forbidden(DomainError):
    status_code = 403
    type = "forbidden"


class Conflict(DomainError):
    status_code = 409
    type = "conflict"


class Invalid(DomainError):
    """Input that parsed but names things that do not exist or breaks a rule; the message names the field."""

    status_code = 422
    type = "invalid"


class Unauthorized(DomainError):
    status_code = 401
    type = "unauthorized"


class ProblemUnavailable(DomainError):
    """The problem cannot be served now for a reason of its set's own (its generator failed): not the student's
    fault, and a retry does not help until the instructor fixes the set (so no Retry-After)."""

    status_code = 503
    type = "problem_unavailable"


class UnsupportedMediaType(DomainError):
    status_code = 415
    type = "unsupported_media_type"
