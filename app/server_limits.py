"""What keeps a flood of connections from starving the server: the open-file limit, and bounds on HTTP connections.

A connection costs the server one fd from the moment it is accepted. At the usual soft limit of 1024, about a
thousand idle connections leave no fd for the sandbox's pipes, the database or the next accept, and grading stops.
So `serve` and `worker` raise the soft ``RLIMIT_NOFILE`` to the hard limit (at most ``OPEN_FILES_CAP``), and
`serve` runs uvicorn with a connection guard (``guarded_protocol``) on top of uvicorn's own protocol:

- at most ``max_connections`` connections are held (default: the open-file limit less ``FD_RESERVE``, which stays
  free for the sandbox, the database pool, the symbolic workers and logs). A connection past the cap evicts the
  oldest one that is still waiting for its request head; if every connection is busy with a request, the new one
  is closed at once.
- a connection must send a complete request head within ``header_timeout_s`` of opening (or of the end of its
  previous response), and its body within ``body_timeout_s`` of the head; trickling bytes does not reset either
  deadline. uvicorn itself closes only idle keep-alive connections (``timeout_keep_alive``, after a response):
  a connection that never sends a request, or sends it byte by byte, it keeps for ever.

While the app answers a request nothing here bounds it: `?wait=N` is capped by ``max_wait_s``, and a client that
does not read its response is not timed out (uvicorn has no write timeout).
"""

from __future__ import annotations

import asyncio
import logging
import resource
from dataclasses import dataclass
from typing import Any, ClassVar, cast

from uvicorn.protocols.http.auto import AutoHTTPProtocol

from app.config import Settings

log = logging.getLogger(__name__)

OPEN_FILES_CAP = 65536
FD_RESERVE = 512
MIN_CONNECTIONS = 64


def raise_open_file_limit(cap: int = OPEN_FILES_CAP) -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit, at most ``cap`` (never lowering it); return the soft limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = cap if hard == resource.RLIM_INFINITY else min(hard, cap)
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as exc:  # e.g. macOS refuses more than OPEN_MAX
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
    now = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    limit = cap if now == resource.RLIM_INFINITY else now
    hard_text = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
    log.info("open-file limit (RLIMIT_NOFILE): %d (was %d, hard limit %s)", limit, soft, hard_text)
    return limit


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    header_timeout_s: float
    body_timeout_s: float
    keep_alive_s: int
    backlog: int


def connection_limits(settings: Settings, open_files: int) -> ConnectionLimits:
    """The bounds for a server with ``open_files`` fds: a configured cap never leaves less than FD_RESERVE free."""
    room = max(MIN_CONNECTIONS, open_files - FD_RESERVE)
    wanted = settings.http_max_connections
    if wanted is not None and wanted > room:
        log.warning("AUTOGRADER_HTTP_MAX_CONNECTIONS=%d leaves too few of %d fds: using %d", wanted, open_files, room)
    return ConnectionLimits(
        max_connections=room if wanted is None else min(wanted, room),
        header_timeout_s=settings.http_header_timeout_s,
        body_timeout_s=settings.http_body_timeout_s,
        keep_alive_s=settings.http_keep_alive_s,
        backlog=settings.http_backlog,
    )


def uvicorn_options(limits: ConnectionLimits) -> dict[str, Any]:
    """Keyword arguments for uvicorn.Config / uvicorn.run."""
    return {
        "http": guarded_protocol(limits),
        # uvicorn answers 503 once it holds this many connections or running requests; the guard keeps connections
        # at most max_connections, so this only turns away requests that outlive their connection.
        "limit_concurrency": limits.max_connections + 1,
        "timeout_keep_alive": limits.keep_alive_s,
        "backlog": limits.backlog,
        "ws": "none",  # the app has no websockets; an upgrade would hand the connection to an unguarded protocol
    }


def describe(limits: ConnectionLimits) -> str:
    return (
        f"at most {limits.max_connections} connections, a request head within {limits.header_timeout_s:g} s "
        f"and its body within {limits.body_timeout_s:g} s, keep-alive {limits.keep_alive_s} s, "
        f"listen backlog {limits.backlog}"
    )


def guarded_protocol(limits: ConnectionLimits, base: type[asyncio.Protocol] | None = None) -> type[asyncio.Protocol]:
    """uvicorn's HTTP protocol (httptools, else h11) with the connection guard; one class per server."""
    base = base or AutoHTTPProtocol
    namespace = {"limits": limits, "waiting": {}}
    return cast(type[asyncio.Protocol], type(f"Guarded{base.__name__}", (_ConnectionGuard, base), namespace))


class _ConnectionGuard(asyncio.Protocol):
    """Mixin over uvicorn's H11Protocol / HttpToolsProtocol; reads only their ``transport``, ``connections`` (the
    server's set of open connections) and ``cycle`` (the current request: ``more_body``, ``response_complete``)."""

    limits: ClassVar[ConnectionLimits]
    waiting: ClassVar[dict[_ConnectionGuard, None]]  # connections waiting for a request head, oldest first

    transport: asyncio.Transport
    connections: set[Any]
    cycle: Any
    _watched: tuple[str, object] | None = None
    _deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            oldest = next(iter(self.waiting), self)
            oldest._drop("the server holds its maximum of connections")
        self._watch()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # type: ignore[misc]
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        self._unwatch()
        super().connection_lost(exc)

    def _phase(self) -> str | None:
        if self.transport.is_closing():
            return None
        if self.cycle is None or self.cycle.response_complete:
            return "head"
        return "body" if self.cycle.more_body else None  # None: the app is answering

    def _watch(self) -> None:
        """Arm a deadline when the connection enters a phase; bytes that do not end the phase leave it running."""
        phase = self._phase()
        if phase is None:
            self._unwatch()
            return
        watched = (phase, self.cycle)
        if watched == self._watched:
            return
        self._unwatch()
        self._watched = watched
        timeout = self.limits.header_timeout_s if phase == "head" else self.limits.body_timeout_s
        self._deadline = asyncio.get_running_loop().call_later(timeout, self._expire, watched)
        if phase == "head":
            self.waiting[self] = None

    def _unwatch(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = None
        self._watched = None
        self.waiting.pop(self, None)

    def _expire(self, watched: tuple[str, object]) -> None:
        if watched == self._watched:
            self._drop(f"no complete request {watched[0]} in time")

    def _drop(self, why: str) -> None:
        log.debug("closing a connection: %s", why)
        self._unwatch()
        self.connections.discard(self)  # at once, so the count never stays above the cap
        if not self.transport.is_closing():
            self.transport.close()
