"""A fixed set of warm slots shared by grading threads: a thread borrows a slot for one submission."""

from __future__ import annotations

import contextlib
import logging
import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from graders.sandbox import cgroups
from graders.sandbox.config import SandboxConfig
from graders.sandbox.slot import Slot

log = logging.getLogger(__name__)


class SlotPool:
    def __init__(self, config: SandboxConfig) -> None:
        hierarchy = cgroups.detect()
        if hierarchy is not None and (stale := hierarchy.sweep_stale()):
            log.warning("removed %d cgroup(s) left by a grader that died", stale)
        # Each slot's children share one cgroup with the slot's CPU share (cgroup_common.SLOT_CPU_*).
        self.slots = [Slot(config, hierarchy.slot() if hierarchy else None) for _ in range(config.slots)]
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
            with slot.pool.serving():  # children for the next submission are forked once this one is done
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
            if slot.cgroups is not None:
                slot.cgroups.remove()
