"""One slot: three uids leased for its lifetime, a warm zygote, and the spawning of the children of a submission.

A submission's child for its visible checks runs as the slot's uid (role STUDENT); the child of one hidden or
sealed check, alive at the same time (the first one is stopped meanwhile), runs as the second uid (role ALONE). A
reference child (instructor code timed by ``time_reference`` while the student's processes are stopped) runs as the
third. Each role has its own working dir, and reaping a child (which kills every process of its uid) can never touch
another role's processes; RLIMIT_NPROC counts them apart.
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
from graders.sandbox.lockdown import ChildSpec
from graders.sandbox.student_process import ChildHandles, StudentProcess
from graders.sandbox.zygote_client import ZygoteClient

STUDENT, ALONE, REFERENCE = "student", "alone", "reference"
ROLES = (STUDENT, ALONE, REFERENCE)


class Slot:
    def __init__(self, config: SandboxConfig, cgroups: SlotCgroups | None) -> None:
        self.config, self.cgroups = config, cgroups
        self.leases: dict[str, uids.UidLease] = {}
        if config.sandboxed:
            try:
                for role in ROLES:
                    self.leases[role] = uids.lease_uid(config.uid_base, config.lock_dir)
            except BaseException:
                for lease in self.leases.values():
                    lease.release()
                raise
        self.zygote: ZygoteClient | None = None
        self.needs_restart = False  # a cleanup failed after a result was kept: restart before the next spawn

    @property
    def uid(self) -> int | None:
        return self.uid_for(STUDENT)

    def uid_for(self, role: str) -> int | None:
        lease = self.leases.get(role)
        return lease.uid if lease is not None else None

    def ensure_zygote(self) -> ZygoteClient:
        if self.zygote is None or not self.zygote.alive() or self.needs_restart:
            self.restart()
        assert self.zygote is not None
        return self.zygote

    def restart(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        self.needs_restart = False
        self.zygote = ZygoteClient(self.config)

    def spawn(self, limits: RunLimits, role: str = STUDENT) -> StudentProcess:
        """Fork a locked-down child, ready for source code. Raises SandboxError on internal failure.

        Args:
            role: STUDENT (the submission's visible checks), ALONE (one hidden check, while the STUDENT child is
                stopped) or REFERENCE (instructor code, while the student's children are stopped).
        """
        if role not in ROLES:
            raise ValueError(f"unknown child role {role!r}")
        zygote = self.ensure_zygote()
        pipes = [os.pipe() for _ in range(3)]  # requests, replies, output
        for r, _ in pipes[:2]:
            widen_pipe(r)
        (req_r, req_w), (rep_r, rep_w), (out_r, out_w) = pipes
        spec = self._spec(zygote.work_root, limits, role)
        try:
            inner = int(zygote.request({"op": "spawn", "spec": asdict(spec)}, [req_r, rep_w, out_w])["pid"])
        finally:
            for fd in (req_r, rep_w, out_w):
                os.close(fd)
        channel = ChildChannel(
            req_w, rep_r, out_r, output_cap=limits.output_kb * 1024, max_payload=self.config.max_transfer_mb * 2**20
        )
        handles = ChildHandles(zygote, inner, -1, spec.uid, spec.workdir, None, limits)
        process = StudentProcess(handles, channel)
        try:
            handles.host_pid = zygote.child_host_pid(inner)
            handles.cgroup = self._cgroup(limits)
            if handles.cgroup is not None:
                handles.cgroup.add(handles.host_pid)
            os.write(req_w, b"G")  # the child may now lock itself down and load code
            process.wait_ready()
        except BaseException:
            with contextlib.suppress(Exception):
                process.finish()
            raise
        return process

    def _cgroup(self, limits: RunLimits) -> ChildCgroup | None:
        if self.cgroups is None:
            return None
        try:
            return self.cgroups.create(limits.memory_mb * 2**20, limits.nproc)
        except OSError as exc:
            raise SandboxError(f"cannot create the child's cgroup: {exc}") from exc

    def _spec(self, work_root: str, limits: RunLimits, role: str) -> ChildSpec:
        return ChildSpec(
            workdir=f"{work_root}/{role}",
            sandboxed=self.config.sandboxed,
            uid=self.uid_for(role),
            memory_mb=limits.memory_mb,
            memory_by_rlimit=self.cgroups is None,
            cpu_s=max(1, math.ceil(limits.cpu_s)),
            nproc=limits.nproc,
            fsize_mb=min(limits.fsize_mb, self.config.workdir_mb),
            nofile=limits.nofile,
            workdir_mb=self.config.workdir_mb,
        )

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
            self.zygote = None
        for lease in self.leases.values():
            lease.release()
        self.leases = {}
