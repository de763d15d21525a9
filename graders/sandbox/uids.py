"""One distinct non-root uid per concurrent slot (two per slot: student and reference child), host-wide.

RLIMIT_NPROC counts per uid across the machine, and the cleanup kills every process of the slot's uid: two slots
(even in two grader processes) must never share one. A slot holds an flock on its uid's lock file while it lives.

The lock dir belongs to root (the grader's euid) with mode 0700, and lock files are opened with O_NOFOLLOW: a local
user cannot pre-create the dir in a world-writable place or plant a symlink that root would then create or truncate.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from pathlib import Path

from graders.sandbox.errors import SandboxError

SEARCH = 4096
DEFAULT_LOCK_DIR = Path("/run/autograder-sandbox")


def default_lock_dir() -> Path:
    return DEFAULT_LOCK_DIR


def secure_lock_dir(folder: Path) -> Path:
    """Create ``folder`` (0700) if missing; refuse it unless it is a real dir owned by this euid with mode 0700."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise SandboxError(f"the uid lock dir {folder} is not a directory (a symlink?); refusing it")
    if st.st_uid != os.geteuid():
        raise SandboxError(f"the uid lock dir {folder} is owned by uid {st.st_uid}, not {os.geteuid()}; refusing it")
    if st.st_mode & 0o077:
        raise SandboxError(f"the uid lock dir {folder} has mode {stat.S_IMODE(st.st_mode):o}; it must be 0700")
    return folder


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
    folder = secure_lock_dir(lock_dir or default_lock_dir())
    dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for uid in range(base, base + SEARCH):
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(f"{uid}.lock", flags, 0o600, dir_fd=dir_fd)
            except OSError as exc:
                raise SandboxError(f"cannot open the uid lock file {folder}/{uid}.lock: {exc}") from exc
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                os.close(fd)
                raise SandboxError(f"the uid lock file {folder}/{uid}.lock is not a regular file")
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            return UidLease(uid, fd)
    finally:
        os.close(dir_fd)
    raise SandboxError(f"no free sandbox uid in [{base}, {base + SEARCH})")
