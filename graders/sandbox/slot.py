"""One slot: uids leased for its lifetime, a warm zygote, and the children of the submissions it grades.

A submission's child for its visible checks has role STUDENT; the child its hidden checks share (and the one its
sealed checks share), started once the visible checks are done, has role ALONE; a reference child (instructor code
timed while the student's processes are stopped) has role REFERENCE. Children come from the slot's pool of
pre-forked, locked-down children (``prefork.ChildPool``), so several children of one role may be alive at once: one
serving, some waiting, one being reaped. Each child therefore sits in a *seat* of its role, a uid and a working dir
of its own that no other live child holds: reaping a child (which kills every process of its uid) never touches
another child, and RLIMIT_NPROC counts each child apart.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import asdict

from graders.sandbox import uids
from graders.sandbox.cgroups import ChildCgroup, SlotCgroups
from graders.sandbox.channel import ChildChannel, widen_pipe
from graders.sandbox.config import RunLimits, SandboxConfig
from graders.sandbox.errors import SandboxError
from graders.sandbox.lockdown import LIMIT_FIELDS, ChildSpec
from graders.sandbox.prefork import EXTRA_SEATS, ChildPool, Seat
from graders.sandbox.student_process import ChildHandles, StudentProcess
from graders.sandbox.zygote_client import ZygoteClient

STUDENT, ALONE, REFERENCE = "student", "alone", "reference"
ROLES = (STUDENT, ALONE, REFERENCE)


class Slot:
    def __init__(self, config: SandboxConfig, cgroups: SlotCgroups | None) -> None:
        self.config, self.cgroups = config, cgroups
        self.leases: list[uids.UidLease] = []
        self.seats: dict[str, list[Seat]] = {}
        try:
            for role in ROLES:
                # Hidden checks come many to a submission: their pool may grow to prefork_max (ChildPool.want).
                depth = config.prefork_max if role == ALONE else config.prefork
                self.seats[role] = []
                for index in range(depth + EXTRA_SEATS):
                    uid = None
                    if config.sandboxed:
                        self.leases.append(uids.lease_uid(config.uid_base, config.lock_dir))
                        uid = self.leases[-1].uid
                    self.seats[role].append(Seat(role, index, uid))
        except BaseException:
            for lease in self.leases:
                lease.release()
            raise
        self.zygote: ZygoteClient | None = None
        self.needs_restart = False  # a cleanup failed after a result was kept: restart before the next spawn
        self.pool = ChildPool(self, ROLES, config.prefork, config.prefork_max)

    @property
    def uid(self) -> int | None:
        """The first STUDENT seat's uid (every seat's: ``uids``)."""
        return self.seats[STUDENT][0].uid

    @property
    def uids(self) -> list[int]:
        return [seat.uid for seats in self.seats.values() for seat in seats if seat.uid is not None]

    def ensure_zygote(self) -> ZygoteClient:
        if self.zygote is None or not self.zygote.alive() or self.needs_restart:
            self.restart()
        assert self.zygote is not None
        return self.zygote

    def restart(self) -> None:
        """A fresh zygote; every child of the old one (pre-forked or not) dies with it and is discarded."""
        self.pool.forget_zygote()
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        self.needs_restart = False
        self.zygote = ZygoteClient(self.config)
        self.pool.new_zygote(self.zygote)

    def spawn(self, limits: RunLimits, role: str = STUDENT) -> StudentProcess:
        """A locked-down child under ``limits``, ready for source code. Raises SandboxError on internal failure.

        The child comes from the pool (forked ahead at the pool's ceiling and lowered to ``limits`` now), or is
        forked now when none is waiting. Give it back with ``release``.

        Args:
            role: STUDENT (the submission's visible checks), ALONE (its hidden checks, or its sealed ones, after
                the visible checks) or REFERENCE (instructor code, while the student's children are stopped).
        """
        if role not in ROLES:
            raise ValueError(f"unknown child role {role!r}")
        self.ensure_zygote()
        return self.pool.take(limits, role)

    def release(self, process: StudentProcess) -> None:
        """The run is over: kill it now; reap, wipe and remove its cgroup in the background (``settle`` waits)."""
        self.pool.release(process)

    def settle(self, timeout_s: float = 30.0) -> None:
        """Wait until every released child is reaped and the pool is full again (tests, benchmarks)."""
        self.pool.settle(timeout_s)

    def fork(self, zygote: ZygoteClient, ceiling: RunLimits, seat: Seat) -> StudentProcess:
        """Fork a child at ``ceiling``, put it in its cgroup (at ``ceiling`` too) and let it finish its lockdown.

        Does not wait for the child's "ready" (``arm`` does): the lockdown of one child overlaps the next fork.
        Raises SandboxError on internal failure (the caller releases the seat).
        """
        pipes = [os.pipe() for _ in range(3)]  # requests, replies, output
        for r, _ in pipes[:2]:
            widen_pipe(r)
        (req_r, req_w), (rep_r, rep_w), (out_r, out_w) = pipes
        spec = self._spec(zygote.work_root, ceiling, seat)
        try:
            reply = zygote.request({"op": "spawn", "spec": asdict(spec)}, [req_r, rep_w, out_w])
        except BaseException:
            for fd in (req_w, rep_r, out_r):
                os.close(fd)
            raise
        finally:
            for fd in (req_r, rep_w, out_w):
                os.close(fd)
        channel = ChildChannel(
            req_w, rep_r, out_r, output_cap=ceiling.output_kb * 1024, max_payload=self.config.max_transfer_mb * 2**20
        )
        inner = int(reply["pid"])
        process = StudentProcess(ChildHandles(zygote, inner, -1, spec.uid, spec.workdir, None, ceiling), channel)
        process.spawn_stamps = reply.get("t") or []
        try:
            process.h.host_pid = zygote.child_host_pid(inner)
            # The parent writes the pid (a process must not choose its own limits); the write can take ~10 ms and
            # more under load (the kernel syncs RCU to move a process), which is why it happens here, ahead.
            process.h.cgroup = self._cgroup(ceiling)
            if process.h.cgroup is not None:
                process.h.cgroup.add(process.h.host_pid)
            process.go()
        except BaseException:
            with contextlib.suppress(Exception):
                process.finish()
            raise
        return process

    def arm(self, process: StudentProcess, limits: RunLimits, seat: Seat) -> None:
        """Release a pre-forked child for one run: its cgroup and rlimits lowered from the ceiling to ``limits``.

        Raises SandboxError (the caller discards the child): nothing of the student's has run in it yet.
        """
        process.wait_ready()  # at once for a child that waited in the pool
        if process.h.cgroup is not None:
            try:
                process.h.cgroup.lower(limits.memory_mb * 2**20, limits.nproc)
            except OSError as exc:
                raise SandboxError(f"cannot lower the child's cgroup limits: {exc}") from exc
        process.h.limits = limits
        process.channel.output_cap = limits.output_kb * 1024
        spec = self._spec(process.h.zygote.work_root, limits, seat)
        process.arm({name: getattr(spec, name) for name in LIMIT_FIELDS})

    def fits(self, ceiling: RunLimits, limits: RunLimits) -> bool:
        """Whether a child forked at ``ceiling`` can be lowered to ``limits`` (rlimits only ever go down)."""
        high, low = self._spec("", ceiling, None), self._spec("", limits, None)
        return all(getattr(high, name) >= getattr(low, name) for name in LIMIT_FIELDS)

    def _cgroup(self, limits: RunLimits) -> ChildCgroup | None:
        if self.cgroups is None:
            return None
        try:
            return self.cgroups.create(limits.memory_mb * 2**20, limits.nproc)
        except OSError as exc:
            raise SandboxError(f"cannot create the child's cgroup: {exc}") from exc

    def _spec(self, work_root: str, limits: RunLimits, seat: Seat | None) -> ChildSpec:
        return ChildSpec(
            workdir=f"{work_root}/{seat.dirname}" if seat is not None else "",
            sandboxed=self.config.sandboxed,
            uid=seat.uid if seat is not None else None,
            memory_mb=limits.memory_mb,
            memory_by_rlimit=self.cgroups is None,
            cpu_s=max(1, math.ceil(limits.cpu_s)),
            nproc=limits.nproc,
            fsize_mb=min(limits.fsize_mb, self.config.workdir_mb),
            nofile=limits.nofile,
            workdir_mb=self.config.workdir_mb,
        )

    def close(self) -> None:
        self.pool.close()
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        self.pool.abandon_all()
        for lease in self.leases:
            lease.release()
        self.leases = []
