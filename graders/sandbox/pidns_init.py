"""The per-run init: pid 1 of each child's own pid namespace (``Zygote._fork_isolated`` starts one per run).

It holds nothing and does nothing but reap: it runs as "nobody" with no capability and no_new_privs, with every fd
closed and SIGCHLD ignored, so that the kernel reaps at once the orphans it adopts (a double fork's middle process
exits). It is never the student's process, which therefore keeps ordinary signal dispositions and its own waitpid().
The zygote kills it when it reaps the run; its death makes the kernel SIGKILL every process left in the namespace,
whatever its session or uid.

Kept apart from zygote.py (which imports torch) so that ``autograder doctor`` can tell which init this host gets.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
from typing import NoReturn

PR_SET_NAME = 15
PR_SET_NO_NEW_PRIVS = 38
INIT_UID = 65534  # "nobody": no capability, and the slot's uids cannot signal it
TOOL_PATH = "/usr/bin:/bin"


def init_argv() -> list[str] | None:
    """The command of a per-run init, or None where this jail lacks the tools (then ``run_init`` is forked instead).

    setpriv drops to "nobody" (every uid and gid, no supplementary group: no capability left, not even ambient ones)
    and sets no_new_privs; GNU env ignores SIGCHLD, which survives the exec; sleep then waits to be killed. As pid 1
    of the run's namespace it adopts the orphans of a double fork, and with SIGCHLD ignored the kernel reaps them at
    once. Spawned (vfork + exec), it costs ~0.3 ms; a fork of the warmed zygote costs ~4 ms, and its exit ~10 ms more.
    """
    tools = [shutil.which(name, path=TOOL_PATH) for name in ("setpriv", "env", "sleep", "true")]
    if None in tools:
        return None
    setpriv, env, sleep, true = (str(t) for t in tools)
    ids = [f"--reuid={INIT_UID}", f"--regid={INIT_UID}", "--clear-groups", "--no-new-privs"]
    argv = [setpriv, *ids, "--", env, "--ignore-signal=CHLD", sleep, "2147483647"]
    try:  # an env without --ignore-signal (coreutils < 8.31, busybox) fails here
        probe = os.posix_spawn(env, [env, "--ignore-signal=CHLD", true], {})
        ok = os.waitstatus_to_exitcode(os.waitpid(probe, 0)[1]) == 0
    except OSError:
        ok = False
    return argv if ok else None


def run_init() -> NoReturn:
    """The fallback per-run init, forked from the zygote where ``init_argv`` finds no tools; never returns.

    The same as the spawned one: every fd closed, uid "nobody", no capability, no_new_privs, SIGCHLD ignored (the
    kernel reaps adopted orphans), then it waits to be killed.
    """
    try:
        os.closerange(0, 1 << 20)
        lib = ctypes.CDLL(None, use_errno=True)
        lib.prctl(PR_SET_NAME, b"autograder-init", 0, 0, 0)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
        os.setgroups([])
        os.setresgid(INIT_UID, INIT_UID, INIT_UID)
        os.setresuid(INIT_UID, INIT_UID, INIT_UID)
        lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        with contextlib.suppress(ChildProcessError):  # a zombie adopted before SIG_IGN took effect
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        while True:
            signal.pause()
    finally:
        os._exit(0)


def ignores_sigchld(pid: int) -> bool | None:
    """Whether ``pid`` ignores SIGCHLD yet (its SigIgn mask in /proc); None when it is gone or a zombie."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            fields = dict(line.split(":", 1) for line in fh if ":" in line)
    except OSError:
        return None
    if fields.get("State", "").strip().startswith(("Z", "X")):
        return None
    return bool(int(fields.get("SigIgn", "0").strip(), 16) & (1 << (signal.SIGCHLD - 1)))
