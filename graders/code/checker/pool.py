"""Warm checkers, one per set folder and slot, reused across submissions; and the checks they stand for.

``describe`` returns the file's checks as ``CheckSpec``s whose function is a ``RemoteCheck``: calling it with the
service's SandboxProxy runs the check in the checker of the set and of the slot the calling thread grades in.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graders.code.checker.host import (
    CHECK_ENDED,
    CHECK_TIMED_OUT,
    CheckerGone,
    CheckerProcess,
    ChecksUnavailable,
)
from graders.code.checks import CheckSpec
from graders.code.grader import VariantFailed
from graders.code.proxy import CheckUsageError
from graders.sandbox.cgroup_common import SlotCgroups
from graders.sandbox.config import SandboxConfig
from graders.words import Words

log = logging.getLogger(__name__)
VARIANT_TIMEOUT_S = 5.0  # one generate(seed): arithmetic on a few numbers, not a computation
DESCRIBE = 0  # files are described by slot 0's checker: with one slot, a set needs one checker in all


@dataclass(frozen=True, eq=False)
class RemoteCheck:
    """The function of a jailed check: call it with the service's SandboxProxy."""

    pool: CheckerPool
    root: Path
    relative: str
    name: str

    def __call__(self, proxy: Any) -> str | Words | None:
        return self.pool.run(self, proxy)


class CheckerPool:
    """At most ``limit`` warm checkers; the least recently used one is stopped to make room."""

    def __init__(self, config: SandboxConfig, limit: int | None = None) -> None:
        self.config = config
        self.limit = limit or 2 * config.slots + 2
        self._lock = threading.Lock()
        self._checkers: OrderedDict[tuple[Path, int], CheckerProcess] = OrderedDict()
        self._specs: dict[tuple[Path, str], list[CheckSpec]] = {}
        self._local = threading.local()
        self._closed = False

    @contextlib.contextmanager
    def for_slot(self, key: int, cgroups: SlotCgroups | None = None) -> Iterator[None]:
        """Checks run on this thread meanwhile use the checkers of slot ``key``, inside its CPU share ``cgroups``."""
        self._local.slot, self._local.cgroups = key, cgroups
        try:
            yield
        finally:
            self._local.slot = self._local.cgroups = None

    def describe(self, root: Path, relative: str) -> list[CheckSpec]:
        """The checks of ``root/relative``, imported in the set's checker. Raises ChecksUnavailable."""
        root = root.resolve()
        with self._lock:
            cached = self._specs.get((root, relative))
        if cached is not None:
            return cached
        with self._borrow(root, DESCRIBE) as checker:
            try:
                fields = checker.describe(relative)
            except CheckerGone as exc:
                self._discard(root, DESCRIBE, checker)
                tail = checker.stderr_tail()
                raise ChecksUnavailable(f"the checker failed ({exc}){': ' + tail if tail else ''}") from None
        specs = [CheckSpec(func=RemoteCheck(self, root, relative, f["name"]), **f) for f in fields]
        with self._lock:
            self._specs[(root, relative)] = specs
        for key in range(1, self.config.slots):  # the other slots' checkers start now, not at their first grading
            threading.Thread(target=self._warm, args=(root, relative, key), name="checker-warm", daemon=True).start()
        return specs

    def variant(self, root: Path, relative: str, seed: int, timeout_s: float = VARIANT_TIMEOUT_S) -> Any:
        """``generate(seed)`` of the set's generator ``relative``, run in the set's checker under ``timeout_s``
        (past it the checker is killed). Raises VariantFailed; the data is validated by the caller."""
        root = root.resolve()
        with self._borrow(root, DESCRIBE) as checker:
            try:
                if not checker.started:  # a new checker's own start (the interpreter) is not the generator's time
                    checker.ping()
                return checker.variant(relative, seed, timeout_s)
            except ChecksUnavailable as exc:
                raise VariantFailed(str(exc)) from None
            except CheckerGone as exc:
                self._discard(root, DESCRIBE, checker)
                why = f"ran past its {timeout_s:g} s" if str(exc) == "timeout" else f"its checker failed ({exc})"
                raise VariantFailed(f"the generator {why}") from None

    def _warm(self, root: Path, relative: str, key: int) -> None:
        try:
            with self._borrow(root, key) as checker:
                checker.describe(relative)
        except Exception as exc:  # the first grading in that slot starts it again and reports what fails
            log.info("could not warm a checker for %s: %s", relative, type(exc).__name__)

    def run(self, check: RemoteCheck, proxy: Any) -> str | Words | None:
        key = getattr(self._local, "slot", None)
        key = DESCRIBE if key is None else key
        spec = next(s for s in self.describe(check.root, check.relative) if s.name == check.name)
        with self._borrow(check.root, key) as checker:
            try:
                if not checker.started:  # a new checker: its start (the torch import) is not the check's time
                    checker.describe(check.relative)
                    restart = getattr(proxy, "restart_budget", None)
                    if restart is not None:
                        restart()
                checker.join(getattr(self._local, "cgroups", None))
                return checker.run(check.relative, spec, proxy, float(getattr(proxy, "_call_limit_s", 0.0)))
            except ChecksUnavailable as exc:
                raise CheckUsageError(f"the checks no longer import: {exc}") from None
            except CheckerGone as exc:
                self._discard(check.root, key, checker)
                log.warning("check %s: the checker failed (%s): %s", check.name, exc, checker.stderr_tail()[-300:])
                raise CheckUsageError(CHECK_TIMED_OUT if str(exc) == "timeout" else CHECK_ENDED) from None

    @contextlib.contextmanager
    def _borrow(self, root: Path, key: int) -> Iterator[CheckerProcess]:
        with self._lock:
            if self._closed:
                raise ChecksUnavailable("the grader is closed")
            checker = self._checkers.get((root, key))
            if checker is not None and not checker.alive():
                self._checkers.pop((root, key))
                checker.close()
                checker = None
            if checker is None:
                checker = CheckerProcess(self.config, root)
                self._checkers[(root, key)] = checker
            self._checkers.move_to_end((root, key))
            evicted = []
            while len(self._checkers) > self.limit:
                evicted.append(self._checkers.popitem(last=False)[1])
        for old in evicted:
            with old.lock:
                old.close()
        with checker.lock:
            yield checker

    def _discard(self, root: Path, key: int, checker: CheckerProcess) -> None:
        with self._lock:
            if self._checkers.get((root, key)) is checker:
                self._checkers.pop((root, key))
        checker.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            checkers = list(self._checkers.values())
            self._checkers.clear()
            self._specs.clear()
        for checker in checkers:
            checker.close()
