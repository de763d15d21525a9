"""Holes found by a security review, each with the attack that showed it.

SysV IPC across submissions, cleanup of hostile working dirs, student-controlled text sizes, malformed gradient
replies, misattributed bad returns, and the uid lock dir. Each attack ends below full marks (or is graded normally
when the behaviour is legitimate), and the worker grades the next submission normally.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest

from graders.code import slot_grading
from graders.code.sanitise import DID_NOT_FINISH
from graders.results import Verdict
from graders.sandbox import uids, zygote
from graders.sandbox.errors import SandboxError
from graders.sandbox.student_process import StudentProcess
from tests.sandbox import support

IPC_PRELUDE = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
"""

PLANT = """
shmid = libc.shmget(0x5EC7, 64 * 2**20, 0o1000 | 0o666)
if shmid < 0:
    raise RuntimeError(f"shmget errno {ctypes.get_errno()} in {os.readlink('/proc/self/ns/ipc')}")
addr = libc.shmat(shmid, None, 0)
ctypes.memset(addr, 0x41, 64 * 2**20)
ctypes.memmove(addr, b"left by submission A", 20)
"""

READ = """
shmid = libc.shmget(0x5EC7, 0, 0)
if shmid < 0:
    raise RuntimeError(f"nothing left behind (errno {ctypes.get_errno()})")
addr = libc.shmat(shmid, None, 0)
raise RuntimeError("found: " + ctypes.string_at(addr, 20).decode())
"""


def test_sysv_ipc_calls_are_denied(grader):
    body = """
errors = {}
for name, call in (("shmget", lambda: libc.shmget(0, 4096, 0o1000 | 0o600)),
                   ("msgget", lambda: libc.msgget(0, 0o1000 | 0o600)),
                   ("semget", lambda: libc.semget(0, 1, 0o1000 | 0o600)),
                   ("mq_open", lambda: libc.mq_open(b"/q", 0o100 | 2, 0o600, None))):
    errors[name] = (call(), ctypes.get_errno())
raise RuntimeError(f"ipc: {errors}")
"""
    result = support.grade(grader, support.attack_source(body, IPC_PRELUDE))
    feedback = result.checks[0].feedback
    for name in ("shmget", "msgget", "semget", "mq_open"):
        assert f"'{name}': (-1, 1)" in feedback, feedback  # EPERM from seccomp
    support.assert_healthy(grader)


def test_sysv_shm_does_not_survive_into_the_next_submission(grader):
    """Two layers: seccomp refuses shmget (EPERM), and each child has an IPC namespace of its own (not the host's),
    so a segment made past the first layer would die with the child. (A memory-usage check here measured the whole
    host's cgroup, so the other test process's work showed up in it: it said nothing of this segment.)"""
    planted = support.grade(grader, support.attack_source(PLANT, IPC_PRELUDE))
    assert planted.score < support.FULL_MARKS, planted.to_dict()
    feedback = planted.checks[0].feedback
    assert "shmget errno 1 in ipc:[" in feedback, feedback
    assert os.readlink("/proc/self/ns/ipc") not in feedback  # the child's namespace is not this process's
    read = support.grade(grader, support.attack_source(READ, IPC_PRELUDE))
    assert "nothing left behind" in read.checks[0].feedback, read.to_dict()
    assert "found:" not in str(read.to_dict())
    support.assert_healthy(grader)


def test_a_lone_surrogate_in_an_exception_message_reaches_the_feedback_as_a_replacement_character(grader):
    """chr(0xD800) passes every schema (the source holds no surrogate); stored as it came, the feedback could not be
    encoded as UTF-8 and each page or API answer showing the submission was a 500."""
    result = support.grade(grader, support.attack_source('raise RuntimeError("bad " + chr(0xD800) + " text")'))
    feedback = result.checks[0].feedback
    assert "bad \ufffd text" in feedback, feedback
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")
    support.assert_healthy(grader)


def test_a_deep_directory_tree_is_cleaned_up(grader):

    body = """
base = os.getcwd()
top = f"top{len(os.listdir(base))}"  # add() runs once per check
os.mkdir(top)
os.chdir(top)
for i in range(3000):
    os.mkdir("d")
    os.chdir("d")
os.chmod(".", 0)
os.chdir(base)
"""
    result = support.grade(grader, support.attack_source(body))
    assert result.score == support.FULL_MARKS, result.to_dict()  # legitimate: graded normally, no SandboxError
    support.assert_healthy(grader)


def test_many_files_hit_the_inode_cap_and_are_cleaned_up(grader):
    body = """
os.mkdir("f")
for n in range(200_000):
    try:
        os.close(os.open(f"f/{n}", os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as exc:
        raise RuntimeError(f"stopped after {n} files: {exc.strerror}")
"""
    result = support.grade(grader, support.attack_source(body))
    assert result.score < support.FULL_MARKS, result.to_dict()
    assert "No space left on device" in result.checks[0].feedback
    support.assert_healthy(grader)


def test_remove_tree_needs_no_recursion_nor_long_paths(tmp_path):
    top = tmp_path / "run"
    top.mkdir()
    fd = os.open(top, os.O_RDONLY)
    for _ in range(3000):  # deeper than the recursion limit, longer than PATH_MAX
        os.mkdir("dd", dir_fd=fd)
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
        nxt = os.open("dd", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = nxt
    os.close(fd)
    zygote.remove_tree(str(top))
    assert not top.exists()


def test_wipe_reports_instead_of_raising(tmp_path, monkeypatch):
    def boom(path):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(zygote, "remove_tree", boom)
    assert zygote.wipe(str(tmp_path)) == "RecursionError: maximum recursion depth exceeded"


def test_a_cleanup_failure_after_grading_keeps_the_result(grader, monkeypatch):
    original = StudentProcess.finish

    def failing_finish(self):
        original(self)
        raise SandboxError("the zygote could not wipe the run's working dir: RecursionError")

    monkeypatch.setattr(StudentProcess, "finish", failing_finish)
    result = support.grade(grader, support.GOOD_SOURCE)
    assert result.score == support.FULL_MARKS, result.to_dict()
    slot = grader._pool.slots[0]
    slot.settle()  # the cleanup runs in the pool's background, after the result is returned
    assert slot.needs_restart
    old = slot.zygote
    monkeypatch.setattr(StudentProcess, "finish", original)
    support.assert_healthy(grader)
    assert slot.zygote is not old and not slot.needs_restart


HUGE_TEXT = """
import sys
sys._getframe(1).f_globals["_exception_reply"] = lambda exc: {  # the server's module, one frame up
    "error": "raised", "type": "T" * 1_000_000, "message": "m" * 1_000_000, "where": "W" * 1_000_000
}
"""


def test_student_controlled_text_is_truncated(grader):
    loading = support.grade(grader, HUGE_TEXT + "raise ValueError('x')\n")
    assert loading.verdict == Verdict.RUNTIME_ERROR
    assert len(loading.message) < 1500 and loading.message.count("T") <= 100, loading.message[:200]
    assert "T" * 50 in loading.message  # the forged reply was used (and cut), not refused at load
    calling = support.grade(grader, support.attack_source("raise ValueError('x')", HUGE_TEXT))
    feedback = calling.checks[0].feedback
    assert calling.score < support.FULL_MARKS
    assert len(feedback) < 1500 and feedback.count("T") <= 100, feedback[:200]
    support.assert_healthy(grader)


def test_feedback_is_capped_centrally(grader):
    from graders.code.checks import CheckSpec
    from graders.results import Visibility

    def chatty(student):
        return "x" * 100_000

    spec = CheckSpec("chatty", chatty, 1.0, "answer", Visibility.HIDDEN, 10.0, "")
    result = grader.grade(source=support.GOOD_SOURCE, problem=support.problem(), checks=[spec])
    assert len(result.checks[0].feedback) <= slot_grading.FEEDBACK_CHARS


# The sandbox's modules are out of sys.modules, but the process is the student's: the server is one frame up.
EMPTY_GRADS = """
import sys
_server_frame = sys._getframe(1)
_codec = _server_frame.f_globals["codec"]
def _fake(self, fn, args, kwargs, grad, buffers):
    tree, bufs = _codec.encode_value((fn(*args, **kwargs), []), self.caps)
    return {"ok": True, "value": tree}, bufs
type(_server_frame.f_locals["self"])._call_with_grad = _fake
"""


def test_a_malformed_gradient_reply_ends_the_run(grader):
    result = support.grade(grader, support.attack_source("pass", EMPTY_GRADS))
    assert result.verdict == Verdict.RUNTIME_ERROR, result.to_dict()
    assert result.message == DID_NOT_FINISH  # a hidden check's run end, without its cause
    assert result.score < support.FULL_MARKS
    support.assert_healthy(grader)


NONE_ATTENTION = """
def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return None
"""

NARROW_ATTENTION = """
import torch

def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return (torch.softmax(q @ k.transpose(-2, -1), dim=-1) @ v)[..., :2]
"""


@pytest.mark.parametrize(("source", "expected"), [(NONE_ATTENTION, "0 tensor(s)"), (NARROW_ATTENTION, "shape")])
def test_an_unusable_return_under_grad_is_the_students_error(grader, caplog, source, expected):
    with caplog.at_level(logging.ERROR):
        result = support.grade(grader, source)
    gradient = result.checks[3]
    # A hidden check: the refusal is the grader's fixed words (the child's text names the student's value).
    assert gradient.feedback == slot_grading.BAD_RETURN_HIDDEN, result.to_dict()
    assert gradient.visibility == "hidden" and expected
    assert "error in the check" not in str(result.to_dict())
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    support.assert_healthy(grader)


def test_an_all_bad_return_submission_is_bad_return_type(grader):
    from graders.code.checks import CheckSpec
    from graders.results import Visibility

    def grads(student):
        import torch

        x = torch.ones(2, 3, 4, dtype=torch.float64)
        student.call_with_grad("scaled_attention", [x, x, x], {}, [x], [0])

    spec = CheckSpec("grads", grads, 1.0, "gradient", Visibility.HIDDEN, 10.0, "")
    result = grader.grade(source=NONE_ATTENTION, problem=support.problem(), checks=[spec])
    assert result.verdict == Verdict.BAD_RETURN_TYPE, result.to_dict()


def test_the_uid_lock_dir_must_be_private(tmp_path):
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    loose.chmod(0o755)
    with pytest.raises(SandboxError, match="0700"):
        uids.lease_uid(1_700_000, loose)
    link = tmp_path / "link"
    link.symlink_to(loose)
    with pytest.raises(SandboxError, match="not a directory"):
        uids.lease_uid(1_700_000, link)
    if os.geteuid() == 0:
        foreign = tmp_path / "foreign"
        foreign.mkdir(mode=0o700)
        os.chown(foreign, 12345, 12345)
        with pytest.raises(SandboxError, match="owned by"):
            uids.lease_uid(1_700_000, foreign)


def test_uid_lock_files_are_not_followed(tmp_path):
    private = tmp_path / "private"
    victim = tmp_path / "victim"
    victim.write_text("keep")
    lease = uids.lease_uid(1_700_000, private)  # created 0700
    assert (private.stat().st_mode & 0o777) == 0o700
    (private / f"{lease.uid + 1}.lock").symlink_to(victim)
    with pytest.raises(SandboxError, match="lock file"):
        uids.lease_uid(1_700_000, private)  # the next uid's lock file is a planted symlink
    lease.release()
    assert victim.read_text() == "keep"
    assert Path(private).is_dir()
