"""429 as a domain error, and its handler: the project's error shape plus a Retry-After header."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from app.error_format import error_response
from app.errors import N_, DomainError
from app.metrics.registry import RATE_LIMITED


class RateLimited(DomainError):
    status_code = 429

    def __init__(self, limit: str, *, allowed: int, window_s: int, retry_after_s: int) -> None:
        super().__init__(
            N_("rate limit %(limit)s reached: at most %(allowed)s per %(window)s s; retry in %(retry)s s"),
            params={"limit": repr(limit), "allowed": allowed, "window": window_s, "retry": retry_after_s},
        )

        self.limit, self.retry_after_s = limit, retry_after_s


def install_handler(app: FastAPI) -> None:
    """Registered for the subclass, so it wins over the general DomainError handler for 429s only."""

    @app.exception_handler(RateLimited)
    async def rate_limited(request: Request, exc: RateLimited) -> JSONResponse:
        RATE_LIMITED.labels(limit=exc.limit).inc()
        detail = {"loc": ["limit", exc.limit], "msg": exc.message, "type": "rate_limited"}
        return error_response(429, [detail], {"Retry-After": str(exc.retry_after_s)})
