"""Domain errors raised by services; routers map them to HTTP statuses (app.main installs the handlers)."""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    status_code = 400

    def __init__(self, message: str, *, field: str | None = None, extra: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.extra = extra or {}


class NotFound(DomainError):
    status_code = 404


class Forbidden(DomainError):
    status_code = 403


class Conflict(DomainError):
    status_code = 409


class Invalid(DomainError):
    """Input that parsed but names things that do not exist or breaks a rule; the message names the field."""

    status_code = 422


class Unauthorized(DomainError):
    status_code = 401


class UnsupportedMediaType(DomainError):
    status_code = 415
