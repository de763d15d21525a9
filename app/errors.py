"""Domain errors raised by services; app.error_format turns them into the one JSON error shape.

``field`` names the input at fault and ``location`` where it came from (body, query, path or header), so the
response's ``loc`` is ``[location, field]`` (``[location]`` for ``field=""``: the whole body is at fault, and
``[]`` without a field); ``type`` is the stable code a client can branch on.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    status_code = 400
    type = "bad_request"

    def __init__(
        self, message: str, *, field: str | None = None, extra: dict[str, Any] | None = None, location: str = "body"
    ) -> None:
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


class UnsupportedMediaType(DomainError):
    status_code = 415
    type = "unsupported_media_type"
