"""Configuration of the sandbox (per service) and the limits of one run (per submission)."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

log = logging.getLogger(__name__)

UNSAFE_WARNING = (
    "NOT A SANDBOX: code grading runs student code with mode='unsafe-local' (no namespaces, no bubblewrap, "
    "no seccomp, no uid change). Use this only on your own laptop with your own code."
)


@dataclass
class SandboxConfig:
    """How student code is jailed.

    Args:
        mode: "bwrap" (bubblewrap + lockdown; the only safe mode) or "unsafe-local" (dev laptops only).
        slots: concurrent submissions; each slot has its own warm zygote and its own uid.
        dev_mode: must be True for "unsafe-local".
        hidden_paths: extra host paths the jail must never see (the data dir, secrets); the jail binds only what
            Python and torch need, so these are hidden anyway unless they sit under such a path, where they get
            masked.
        uid_base: first uid tried for slots; each slot locks a distinct uid host-wide.
        device: "cpu" or "cuda" (where the student's tensors live).
        workdir_mb: size of the jail's tmpfs working dir (bounds what a submission can write).
        max_transfer_mb: largest frame (all tensors of one argument list or return value together); the trusted side
            may hold one such frame per reply, so keep it small (64 MiB); raise it for problems that need more.
        retries: fresh-zygote retries after an internal failure before SandboxError.
        prefork: children kept forked and locked down ahead, per slot and role (student, hidden check, reference),
            so that a submission does not wait for fork and lockdown (``prefork.py``); 0 forks each on demand.
        prefork_max: how far the pool of hidden-check children may grow (one for a problem's hidden checks and one
            for its sealed ones, more after a crash reruns a check in a fresh child; a waiting child holds ~6 MiB
            of its own).
        checker_memory_mb: the address space (RLIMIT_AS) of each set's checker, the process that runs the set's
            checks; ~640 MiB of it is the interpreter and torch. 0: none. Not applied with device "cuda", whose
            driver reserves far more address space than it uses.
        reverse_cpu_s, reverse_mb: what one submission's reverse calls (the functions a check hands its code,
            run on the trusted side) may cost the grader in all: CPU seconds of the service and the set's checker,
            and MiB of arguments and results (``graders.code.reverse_budget``); past either, further calls fail
            in the student's code.
        lock_dir: where the slots' uid lock files live (default /run/autograder-sandbox); it must be a directory
            owned by the grader's euid with mode 0700, or the sandbox refuses to start.
    """

    mode: Literal["bwrap", "unsafe-local"] = "bwrap"
    slots: int = 1
    dev_mode: bool = False
    hidden_paths: list[Path] = field(default_factory=list)
    uid_base: int = 1_640_000
    device: Literal["cpu", "cuda"] = "cpu"
    workdir_mb: int = 64
    max_transfer_mb: int = 64
    retries: int = 2
    zygote_start_timeout_s: float = 120.0
    bwrap_path: str = "bwrap"
    lock_dir: Path | None = None
    prefork: int = 2
    prefork_max: int = 12
    checker_memory_mb: int = 4096
    reverse_cpu_s: float = 8.0
    reverse_mb: int = 512

    def __post_init__(self) -> None:
        if self.mode not in ("bwrap", "unsafe-local"):
            raise ValueError(f"unknown sandbox mode {self.mode!r}; expected 'bwrap' or 'unsafe-local'")
        if self.slots < 1:
            raise ValueError("slots must be at least 1")
        if not 0 <= self.prefork <= self.prefork_max <= 32:
            raise ValueError("prefork must be between 0 and prefork_max, prefork_max at most 32")
        if self.mode == "unsafe-local":
            if not self.dev_mode:
                raise ValueError("sandbox mode 'unsafe-local' is NOT A SANDBOX and is refused unless dev_mode=True")
            log.warning(UNSAFE_WARNING)
            print(f"WARNING: {UNSAFE_WARNING}", file=sys.stderr)

    @property
    def sandboxed(self) -> bool:
        return self.mode == "bwrap"


@dataclass(frozen=True)
class RunLimits:
    """Limits of one submission's process, applied by the child before student code loads."""

    memory_mb: int = 1024
    cpu_s: int = 60
    nproc: int = 32
    fsize_mb: int = 64
    nofile: int = 128
    output_kb: int = 64
