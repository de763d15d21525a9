"""One distinct non-root uid per concurrent slot, host-wide.

RLIMIT_NPROC counts per uid across the machine, and the cleanup kills every process of the slot's uid: two slots
(even in two grader processes) must never share one. A slot holds an flock on its uid's lock file while it lives.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

from graders.sandbox.errors import SandboxError

SEARCH = 4096


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / "autograder-sandbox-uids"


class UidLease:
    """A uid locked for this process's exclusive use until ``release``."""

    def __init__(self, uid: int, fd: int) -> None:
        self.uid, self._fd = uid, fd

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


def lease_uid(base: int, lock_dir: Path | None = None) -> UidLease:
    """Lock the first free uid at or above ``base``."""
    folder = lock_dir or default_lock_dir()
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    for uid in range(base, base + SEARCH):
        fd = os.open(folder / f"{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    raise SandboxError(f"no free sandbox uid in [{base}, {base + SEARCH})")
