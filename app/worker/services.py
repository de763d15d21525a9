"""The background services of one process, started in one order and stopped in the reverse one.

Every process that grades or serves owns one list (``WorkerRuntime.services``), filled by app.wiring: `serve`
(app.main), the polling worker and the Celery worker wire theirs there, so which services a process runs, and in
which order they start and stop, is written once and can be read in one place.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

log = logging.getLogger(__name__)


class Service(Protocol):
    def start(self) -> None: ...

    def stop(self) -> None: ...


S = TypeVar("S", bound=Service)


@dataclass
class Hook:
    """A service made of two callables (warming the sandbox, closing the rate limiter)."""

    on_start: Callable[[], None] = lambda: None
    on_stop: Callable[[], None] = lambda: None

    def start(self) -> None:
        self.on_start()

    def stop(self) -> None:
        self.on_stop()


class Services:
    """Named services; ``start`` runs them in the order added, ``stop`` stops the started ones in reverse."""

    def __init__(self) -> None:
        self._added: list[tuple[str, Service]] = []
        self._started: list[tuple[str, Service]] = []

    def add(self, name: str, service: S) -> S:
        if any(name == known for known, _ in self._added):
            raise ValueError(f"a service named {name!r} is already wired")
        self._added.append((name, service))
        return service

    @property
    def names(self) -> list[str]:
        return [name for name, _ in self._added]

    @property
    def running(self) -> list[str]:
        return [name for name, _ in self._started]

    def start(self) -> None:
        for name, service in self._added:
            if any(service is s for _, s in self._started):
                continue
            service.start()
            self._started.append((name, service))

    def stop(self) -> None:
        """Stop in reverse order; one service failing to stop does not keep the others running."""
        while self._started:
            name, service = self._started.pop()
            try:
                service.stop()
            except Exception:
                log.exception("background service %s did not stop cleanly", name)
