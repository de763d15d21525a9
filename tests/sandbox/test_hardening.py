"""Hardening of issue 9: no core dumps whatever the host's core_pattern, and PR_SET_DUMPABLE refused.

A pipe ``core_pattern`` (systemd-coredump, apport) ignores ``RLIMIT_CORE``: the kernel hands the dump to the helper
whatever the limit. What it does check first is the dumpable flag, so the child clears it after its uid change
(``lockdown.no_new_privs``) and seccomp refuses ``prctl(PR_SET_DUMPABLE, ...)``. Before, a submission could set
itself dumpable again (prctl returned 0 and the flag read 1). The host's core_pattern is not changed by these tests
(it is machine-wide): they check the flag the kernel consults, and that no dump is written with the host's pattern.
"""

from __future__ import annotations

import errno
import platform
import subprocess
import sys

from tests.sandbox import support

DUMPABLE = """
libc = ctypes.CDLL(None, use_errno=True)
seen = {'before': libc.prctl(3, 0, 0, 0, 0)}
seen['set'] = (libc.prctl(4, 1, 0, 0, 0), ctypes.get_errno())
if platform.machine() == 'x86_64':  # the option with garbage in its high 32 bits, straight to the syscall
    seen['high'] = (libc.syscall(157, ctypes.c_long(4 | (1 << 32)), ctypes.c_long(1), 0, 0, 0), ctypes.get_errno())
seen['after'] = libc.prctl(3, 0, 0, 0, 0)
raise RuntimeError(f"dumpable: {seen}")
"""


def _feedback(result) -> str:
    return result.checks[0].feedback


def test_a_submission_cannot_make_itself_dumpable(grader):
    result = support.grade(grader, support.attack_source(DUMPABLE, prelude="import ctypes, platform"))
    feedback = _feedback(result)
    assert "'before': 0" in feedback and "'after': 0" in feedback, feedback
    assert f"'set': (-1, {errno.EPERM})" in feedback, feedback
    if platform.machine() == "x86_64":
        assert f"'high': (-1, {errno.EPERM})" in feedback, feedback
    support.assert_healthy(grader)


RAISE_CORE = """
import resource
seen = {'limit': resource.getrlimit(resource.RLIMIT_CORE)}
for name, wanted in (('both', (1 << 30, 1 << 30)), ('soft', (1 << 20, 0)), ('unlimited', (-1, -1))):
    try:
        resource.setrlimit(resource.RLIMIT_CORE, wanted)
        seen[name] = 'RAISED'
    except (ValueError, OSError) as exc:
        seen[name] = type(exc).__name__
seen['final'] = resource.getrlimit(resource.RLIMIT_CORE)
raise RuntimeError(f"core: {seen}")
"""


def test_rlimit_core_is_zero_and_cannot_be_raised(grader):
    feedback = _feedback(support.grade(grader, support.attack_source(RAISE_CORE)))
    assert "'limit': (0, 0)" in feedback and "'final': (0, 0)" in feedback, feedback
    assert "RAISED" not in feedback, feedback


ABORT_CHILD = """
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(4, 1, 0, 0, 0)  # try to become dumpable first
import resource
try:
    resource.setrlimit(resource.RLIMIT_CORE, (-1, -1))
except (ValueError, OSError):
    pass
pid = os.fork()
if pid == 0:
    os.abort()
status = os.waitpid(pid, 0)[1]
raise RuntimeError(f"abort: signalled={os.WIFSIGNALED(status)} core={os.WCOREDUMP(status)} files={os.listdir('.')}")
"""


def test_an_abort_dumps_no_core(grader):
    """A crash after every attempt to allow a dump: the kernel reports no core dumped, and no file appears."""
    support.require_fork(grader)
    feedback = _feedback(support.grade(grader, support.attack_source(ABORT_CHILD, prelude="import ctypes")))
    assert "signalled=True core=False" in feedback, feedback
    assert "'core" not in feedback, feedback  # neither core nor core.<pid> in the working dir


PROBE = """
import ctypes, sys
sys.path.insert(0, {src!r})
from graders.sandbox import seccomp_filter
libc = ctypes.CDLL(None, use_errno=True)
assert libc.prctl(4, 0, 0, 0, 0) == 0  # allowed before the filter: this is what the lockdown does
seccomp_filter.install()
out = [libc.prctl(4, 1, 0, 0, 0), ctypes.get_errno(), libc.prctl(3, 0, 0, 0, 0), libc.prctl(15, b"probe", 0, 0, 0)]
print(out)
"""


def test_the_filter_refuses_pr_set_dumpable_and_only_that_option():
    """The rule itself, in a throwaway process (no root needed): other prctl options still work."""
    script = PROBE.format(src=str(support.REPO_ROOT))
    done = subprocess.run([sys.executable, "-I", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"[-1, {errno.EPERM}, 0, 0]", done.stdout  # denied; dumpable still 0; PR_SET_NAME ok
