"""A slot's pool of pre-forked children: fork and lockdown happen before a submission arrives, reaping after it left.

Per role, ``depth`` children wait, forked from the zygote and locked down (session, fds, namespaces, a pid namespace
of their own, rlimits and cgroups at the pool's *ceiling*, uid, no_new_privs, seccomp, their tmpfs), ready and
blocked on their request pipe. Nothing a waiting child holds depends on any submission: it was forked from the
zygote (which never holds submission data) with only the ceiling limits, its seat's uid and working dir. When a
submission takes one (``take``), the trusted side lowers its cgroup limits to the submission's and sends the
limits, which the child applies to its rlimits before it serves anything else (``child.Server.limits``); then the
source is sent. A child serves one submission's visible checks, or its hidden (or sealed) checks, and is never
reused: ``release`` kills it at once, and a housekeeper thread reaps it, wipes its working dir and forks its
replacement, off the critical path: once the submission has given the slot back (``serving``), so that no child
waits through a submission and reads in its own age how long that one ran.

The ceiling is the field-wise largest of the limits seen (it starts at ``RunLimits()``): a waiting child whose
ceiling is below a submission's limits is discarded and one is forked on the spot at the new ceiling.

Which seat (uid) a child gets is drawn at random among the free seats of its role, so that a child's uid does not
tell how many children of its role the slot made before (for instance whether the previous submission loaded).

The pool knows its slot only as a ``SeatHost`` (its seats, and how it forks, arms and sizes a child), so this
module does not import ``slot`` (which builds the pool): the two form no cycle.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from graders.sandbox.config import RunLimits
from graders.sandbox.errors import SandboxError
from graders.sandbox.student_process import StudentProcess
from graders.sandbox.zygote_client import ZygoteClient

log = logging.getLogger(__name__)
TAKE_TIMEOUT_S = 60.0
LIVENESS_CHECK_S = 1.0  # how often the housekeeper looks for waiting children that died
EXTRA_SEATS = 2  # seats per role beyond its depth: the child being served and one being reaped behind it
MAX_TAKE_ATTEMPTS = 3  # a waiting child found dead is replaced; a third failure in a row is the sandbox's


@dataclass(frozen=True)
class Seat:
    """Where one live child sits: its uid (None unsandboxed) and its working dir's name under the zygote's root."""

    role: str
    index: int
    uid: int | None

    @property
    def dirname(self) -> str:
        return f"{self.role}-{self.index}"


class SeatHost(Protocol):
    """What the pool asks of its slot (``slot.Slot``)."""

    seats: dict[str, list[Seat]]
    needs_restart: bool  # a cleanup failed: the zygote restarts before the next run

    def fork(self, zygote: ZygoteClient, ceiling: RunLimits, seat: Seat) -> StudentProcess: ...

    def arm(self, process: StudentProcess, limits: RunLimits, seat: Seat) -> None: ...

    def fits(self, ceiling: RunLimits, limits: RunLimits) -> bool: ...


@dataclass
class Waiting:
    """A pre-forked child: its process (not yet released), the ceiling it was forked at, its seat, its zygote."""

    process: StudentProcess
    ceiling: RunLimits
    seat: Seat
    generation: int
    epoch: int  # ChildPool._epoch when it was forked: it serves no submission after the next one


def _widest(a: RunLimits, b: RunLimits) -> RunLimits:
    fields = {f.name: max(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(RunLimits)}
    return RunLimits(**fields)


class ChildPool:
    """The pre-forked children of one slot and the housekeeper thread that forks and reaps them.

    Thread-safe: the grading thread takes and releases, the housekeeper forks, reaps and refills; every change of
    state happens under ``_cond``. Zygote requests of both threads go one at a time (``ZygoteClient.request``).
    """

    def __init__(self, slot: SeatHost, roles: tuple[str, ...], depth: int, max_depth: int) -> None:
        self.slot, self.roles, self.max_depth = slot, roles, max_depth
        self._depth = dict.fromkeys(roles, depth)  # children kept waiting per role; grows with ``want``
        self._cond = threading.Condition()
        self._waiting: dict[str, deque[Waiting]] = {role: deque() for role in roles}
        self._forking: dict[str, int] = dict.fromkeys(roles, 0)
        self._busy: dict[StudentProcess, Seat] = {}  # every live child of the slot (waiting, serving, being reaped)
        self._reserved: set[Seat] = set()  # seats of children being forked
        self._finishing: deque[StudentProcess] = deque()
        self._ceiling = RunLimits()
        self._zygote: ZygoteClient | None = None
        self._generation = 0
        self._working = False
        self._held = 0  # timing measurements in progress: no housekeeping starts meanwhile
        self._serving = 0  # a submission holds the slot: no child is forked ahead until it gives the slot back
        self._epoch = 0  # submissions the slot has given back (``serving``): children of an earlier epoch are stale
        self._takers = 0  # takes waiting for a child or a seat
        self._closed = False
        self._thread: threading.Thread | None = None

    # --- the grading thread ---------------------------------------------------------------------------------------

    def take(self, limits: RunLimits, role: str) -> StudentProcess:
        """A child of ``role`` released for one run under ``limits``: a waiting one, or one forked now.

        A waiting child that died (killed while it waited, or its lockdown failed) is discarded and the next one
        taken, or one forked now.
        """
        for attempt in range(MAX_TAKE_ATTEMPTS):
            process, seat = self._acquire(limits, role)
            try:
                self.slot.arm(process, limits, seat)
            except SandboxError:
                self.release(process)
                if attempt + 1 == MAX_TAKE_ATTEMPTS:
                    raise
                continue
            return process
        raise AssertionError("unreachable")

    def _acquire(self, limits: RunLimits, role: str) -> tuple[StudentProcess, Seat]:
        deadline = time.monotonic() + TAKE_TIMEOUT_S
        found: Waiting | None = None
        seat: Seat | None = None
        with self._cond:
            self._ceiling = _widest(self._ceiling, limits)
            zygote, generation = self._zygote, self._generation
            if zygote is None or self._closed:
                raise SandboxError("the slot has no zygote")
            while True:
                found = self._pop_fitting(role, limits)
                if found is not None:
                    break
                if self._forking[role] == 0 and (seat := self._free_seat(role)) is not None:
                    self._reserved.add(seat)  # nothing on the way: fork this one now, on the critical path
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    raise SandboxError(f"no {role} child became free within {TAKE_TIMEOUT_S:g} s")
                self._takers += 1  # the housekeeper works even under hold(): it frees the seat this take needs
                self._cond.notify_all()
                try:
                    self._cond.wait(remaining)
                finally:
                    self._takers -= 1
            self._cond.notify_all()  # the housekeeper refills
        if found is not None:
            return found.process, found.seat
        assert seat is not None
        try:
            process = self.slot.fork(zygote, self._ceiling_now(), seat)
        finally:
            with self._cond:
                self._reserved.discard(seat)
        with self._cond:
            self._busy[process] = seat
            if generation != self._generation:  # the zygote was replaced meanwhile
                self._finishing.append(process)
                self._cond.notify_all()
                raise SandboxError("the zygote was restarted while a child was forked")
        return process, seat

    def want(self, role: str, count: int) -> None:
        """A submission will need ``count`` children of ``role`` (hidden checks: one, and one for sealed checks).

        Bounded by ``max_depth`` and by the role's seats; it never shrinks (a grader grades the same few problems).
        The depth depends on the problem, never on a submission's code.
        """
        with self._cond:
            seats = len(self.slot.seats[role]) - EXTRA_SEATS
            depth = min(max(self._depth[role], count), self.max_depth, seats)
            if depth != self._depth[role]:
                self._depth[role] = depth
                self._cond.notify_all()

    def release(self, process: StudentProcess) -> None:
        """Kill the run now (cheap signals only); the housekeeper reaps and wipes it."""
        process.stop()
        with self._cond:
            self._finishing.append(process)
            self._cond.notify_all()

    @contextlib.contextmanager
    def hold(self) -> Iterator[None]:
        """No housekeeping while a timing measurement runs (forks and reaps would share its CPU)."""
        with self._cond:
            self._held += 1
            while self._working and not self._closed:  # the job in progress finishes first (milliseconds)
                self._cond.wait(1.0)
        try:
            yield
        finally:
            with self._cond:
                self._held -= 1
                self._cond.notify_all()

    def settle(self, timeout_s: float) -> None:
        """Until every released child is reaped and every role's pool is full (or cannot be filled)."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._has_work() or self._working or any(self._forking.values()):
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self._closed:
                    raise SandboxError("the child pool did not settle")
                self._cond.wait(min(remaining, 0.05))

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """While one submission holds the slot (``SlotPool.borrow``): the pool forks no child ahead, only reaps.

        A child forked while a submission runs waits until the next one takes it, and its own start time (in
        /proc/self/stat, and the time its /proc was mounted) tells it how long it waited: that was how long the
        submission before it ran, its hidden checks included. So children are forked only while no submission holds
        the slot, and when it is given back every child still waiting is discarded: a child's age is then only the
        idle time since the slot's last submission ended. A take that finds its role empty still forks on the spot
        (``_acquire``).
        """
        with self._cond:
            self._serving += 1
        try:
            yield
        finally:
            with self._cond:
                self._serving -= 1
                # Every child still waiting was forked before the submission started and waited through it: it is
                # reaped unused, and the refill forks fresh ones (as many as the submission took, plus these).
                self._epoch += 1
                for role in self.roles:
                    while self._waiting[role]:
                        self._finishing.append(self._waiting[role].popleft().process)
                self._cond.notify_all()

    # --- the zygote's lifetime (Slot.restart, Slot.close) ----------------------------------------------------------

    def new_zygote(self, zygote: ZygoteClient) -> None:
        with self._cond:
            self._zygote = zygote
            self._cond.notify_all()
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="autograder-child-pool", daemon=True)
                self._thread.start()

    def forget_zygote(self) -> None:
        """The zygote is about to be closed: its waiting children die with it and are discarded."""
        with self._cond:
            self._generation += 1
            self._zygote = None
            for role in self.roles:
                while self._waiting[role]:
                    self._finishing.append(self._waiting[role].popleft().process)
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def abandon_all(self) -> None:
        """After the zygote is gone: close every child's pipes and remove its cgroup (its processes died with it)."""
        with self._cond:
            processes = [w.process for q in self._waiting.values() for w in q] + list(self._finishing)
            processes += list(self._busy)
            self._waiting = {role: deque() for role in self.roles}
            self._finishing.clear()
            self._busy.clear()
        for process in dict.fromkeys(processes):
            process.abandon()

    def pooled_processes(self) -> list[StudentProcess]:
        """The children waiting in the pool (tests: the only live processes and child cgroups between runs)."""
        with self._cond:
            return [w.process for q in self._waiting.values() for w in q]

    def pooled_pids(self) -> list[int]:
        return [process.h.host_pid for process in self.pooled_processes()]

    # --- the housekeeper --------------------------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._closed and ((self._held and not self._takers) or not self._has_work()):
                    self._cond.wait(LIVENESS_CHECK_S)  # a child that dies while it waits notifies nobody
                if self._closed:
                    return
                job = self._next_job()
                self._working = True
            try:
                job()
            except Exception as exc:  # never dies: a failure here is logged, the slot's next run restarts the zygote
                log.warning("child pool housekeeping failed: %s", str(exc)[:300])
            finally:
                with self._cond:
                    self._working = False
                    self._cond.notify_all()

    def _has_work(self) -> bool:
        self._drop_dead()
        return bool(self._finishing) or self._refill_role() is not None

    def _drop_dead(self) -> None:
        """Waiting children that died (killed, or a failed lockdown) go to be reaped; the refill replaces them."""
        for role in self.roles:
            queue = self._waiting[role]
            if any(not w.process.alive() for w in queue):
                dead = [w for w in queue if not w.process.alive()]
                self._waiting[role] = deque(w for w in queue if w not in dead)
                self._finishing.extend(w.process for w in dead)

    def _next_job(self) -> Callable[[], None]:
        """An empty role is refilled first (a submission may be waiting for it), then reaps, then the rest."""
        role = self._refill_role()
        if role is not None and (not self._waiting[role] or not self._finishing):
            return self._refill_job(role)
        process = self._finishing.popleft()
        return lambda: self._finish(process)

    def _refill_role(self) -> str | None:
        if self._zygote is None or self.slot.needs_restart or self._closed or self._serving:
            return None
        short = [r for r in self.roles if len(self._waiting[r]) + self._forking[r] < self._depth[r]]
        short.sort(key=lambda r: len(self._waiting[r]) + self._forking[r])
        return next((r for r in short if self._free_seat(r) is not None), None)

    def _refill_job(self, role: str) -> Callable[[], None]:
        seat = self._free_seat(role)
        assert seat is not None and self._zygote is not None
        self._reserved.add(seat)
        self._forking[role] += 1
        zygote, generation, ceiling, epoch = self._zygote, self._generation, self._ceiling, self._epoch

        def job() -> None:
            process = None
            try:
                process = self.slot.fork(zygote, ceiling, seat)
            finally:
                with self._cond:
                    self._forking[role] -= 1
                    self._reserved.discard(seat)
                    if process is not None:
                        self._busy[process] = seat
                        if generation == self._generation and epoch == self._epoch and not self._closed:
                            self._waiting[role].append(Waiting(process, ceiling, seat, generation, epoch))
                        else:
                            self._finishing.append(process)
                    self._cond.notify_all()

        return job

    def _finish(self, process: StudentProcess) -> None:
        current = process.h.zygote is self._zygote and process.h.zygote.alive()
        try:
            if current:
                report = process.finish()
                if report.output_total:
                    log.debug("submission printed %d bytes", report.output_total)
            else:
                process.abandon()  # its zygote is gone, and every process of it: no signal to a reused pid
        except SandboxError as exc:
            log.warning("cleanup of a child failed; the zygote restarts before the next run: %s", str(exc)[:300])
            with self._cond:
                if process.h.zygote is self._zygote:  # not if the zygote was replaced meanwhile
                    self.slot.needs_restart = True
        finally:
            with self._cond:
                self._busy.pop(process, None)
                self._cond.notify_all()

    # --- under the lock ---------------------------------------------------------------------------------------------

    def _pop_fitting(self, role: str, limits: RunLimits) -> Waiting | None:
        while self._waiting[role]:
            waiting = self._waiting[role].popleft()
            if (
                waiting.generation == self._generation
                and waiting.epoch == self._epoch
                and self.slot.fits(waiting.ceiling, limits)
                and waiting.process.alive()
            ):
                return waiting
            # Forked at a lower ceiling, by a zygote since replaced, before the last submission, or killed meanwhile.
            self._finishing.append(waiting.process)
        return None

    def _free_seat(self, role: str) -> Seat | None:
        taken = set(self._busy.values()) | self._reserved
        free = [seat for seat in self.slot.seats[role] if seat not in taken]
        return secrets.choice(free) if free else None

    def _ceiling_now(self) -> RunLimits:
        with self._cond:
            return self._ceiling
