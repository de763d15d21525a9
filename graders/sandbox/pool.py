"""A fixed set of warm slots shared by grading threads: a thread borrows a slot for one submission."""

from __future__ import annotations

import contextlib
import logging
import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from graders.sandbox.cgroups import CgroupV1
from graders.sandbox.config import SandboxConfig
from graders.sandbox.slot import Slot

log = logging.getLogger(__name__)


class SlotPool:
    def __init__(self, config: SandboxConfig) -> None:
        cgroups = CgroupV1.detect()
        if cgroups is not None and (stale := cgroups.sweep_stale()):
            log.warning("removed %d cgroup(s) left by a grader that died", stale)
        self.slots = [Slot(config, cgroups) for _ in range(config.slots)]
        self._free: queue.Queue[Slot] = queue.Queue()
        try:
            # Warm every zygote now, in parallel: a submission never pays the torch import.
            with ThreadPoolExecutor(max_workers=len(self.slots)) as ex:
                list(ex.map(Slot.ensure_zygote, self.slots))
        except BaseException:
            self.close()
            raise
        for slot in self.slots:
            self._free.put(slot)

    @contextlib.contextmanager
    def borrow(self) -> Iterator[Slot]:
        slot = self._free.get()
        try:
            yield slot
        finally:
            self._free.put(slot)

    def settle(self, timeout_s: float = 30.0) -> None:
        """Until every slot has reaped its released children and refilled its pool (tests, benchmarks)."""
        for slot in self.slots:
            slot.settle(timeout_s)

    def close(self) -> None:
        for slot in self.slots:
            slot.close()
