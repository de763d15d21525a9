"""Attacks a submission may try. Each must end below full marks, change nothing outside, and leave the worker healthy.

Every attack sits in add(): add earns its points only if the attack *succeeded*, so full marks would mean a hole.
"""

from __future__ import annotations

import pytest

from graders.results import Verdict
from tests.sandbox import support

NETWORK = {
    "tcp_postgres": "socket.create_connection(('127.0.0.1', 5432), timeout=1)",
    "tcp_outside": "socket.create_connection(('1.1.1.1', 53), timeout=1)",
    "udp": "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.sendto(b'x', ('127.0.0.1', 53))",
    "raw": "socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)",
    "ipv6": "socket.socket(socket.AF_INET6, socket.SOCK_STREAM).connect(('::1', 5432))",
    "netlink": "socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)",
}


@pytest.mark.parametrize("body", NETWORK.values(), ids=NETWORK.keys())
def test_no_network(grader, body):
    result = support.grade(grader, support.attack_source(body))
    assert result.score < support.FULL_MARKS
    assert result.verdict in (Verdict.PARTIAL, Verdict.RUNTIME_ERROR), result.to_dict()
    support.assert_healthy(grader)


def _read_paths(data_dir):
    return {
        "checks_file": support.CHECKS_PATH,
        "repo_pyproject": support.REPO_ROOT / "pyproject.toml",
        "repo_problems": support.REPO_ROOT / "problems",
        "graders_code": support.REPO_ROOT / "graders" / "code" / "checks.py",
        # Bound into the set's checker only, never into the student's child.
        "check_library": support.REPO_ROOT / "checklibs" / "attention" / "reference.py",
        "check_library_in_the_jail": "/opt/autograder/src/checklibs",
        "database": data_dir / "autograder.db",
        "shadow": "/etc/shadow",
    }


@pytest.mark.parametrize(
    "key",
    [
        "checks_file",
        "repo_pyproject",
        "repo_problems",
        "graders_code",
        "check_library",
        "check_library_in_the_jail",
        "database",
        "shadow",
    ],
)
def test_cannot_read_outside_the_workdir(grader, data_dir, key):
    path = str(_read_paths(data_dir)[key])
    body = f"p = {path!r}\nprint(os.listdir(p) if os.path.isdir(p) else open(p).read()[:100])"
    result = support.grade(grader, support.attack_source(body))
    assert result.score < support.FULL_MARKS, result.to_dict()
    support.assert_healthy(grader)


def test_secret_environment_is_not_visible(grader, secret):
    body = f"""
found = {secret!r} in repr(dict(os.environ))
for pid in os.listdir('/proc'):
    for name in ('environ', 'cmdline'):
        try:
            found = found or {secret!r}.encode() in open(f'/proc/{{pid}}/{{name}}', 'rb').read()
        except OSError:
            pass
if not found:
    raise RuntimeError('secret not found')
"""
    result = support.grade(grader, support.attack_source(body))
    assert result.score < support.FULL_MARKS
    assert "secret not found" in result.to_dict()["checks"][0]["feedback"]
    support.assert_healthy(grader)


def test_cannot_see_or_read_other_processes(grader):
    body = """
readable = []
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            open(f'/proc/{pid}/mem', 'rb').read(1)
            readable.append(pid)
        except OSError:
            pass
if not readable:
    raise RuntimeError('no memory readable')
"""
    result = support.grade(grader, support.attack_source(body))
    assert result.score < support.FULL_MARKS
    support.assert_healthy(grader)


def test_cannot_write_outside_the_workdir(grader, tmp_path):
    targets = [tmp_path / "pwned", support.REPO_ROOT / "pwned", "/tmp/pwned", "/opt/autograder/pwned", "/w/pwned"]
    body = f"""
for target in {[str(t) for t in targets]!r}:
    try:
        open(target, 'w').write('x')
        break
    except OSError:
        pass
else:
    raise RuntimeError('nothing writable')
"""
    result = support.grade(grader, support.attack_source(body))
    assert result.score < support.FULL_MARKS
    assert not (tmp_path / "pwned").exists() and not (support.REPO_ROOT / "pwned").exists()
    support.assert_healthy(grader)


def test_workdir_is_fresh_for_the_next_submission(grader):
    write = support.attack_source("open('left_behind', 'w').write('x')")
    assert support.grade(grader, write).score == support.FULL_MARKS
    read = support.attack_source("open('left_behind').read()")
    assert support.grade(grader, read).score < support.FULL_MARKS


ESCAPES = {
    "kill_parent": "os.kill(os.getppid(), signal.SIGKILL)",
    "kill_all": "os.kill(-1, signal.SIGKILL)",
    "kill_init": "os.kill(1, signal.SIGKILL)",
    "setsid": "os.setsid()",
    "setuid_root": "os.setuid(0)",
    "execve": "os.execv('/bin/sh', ['sh', '-c', 'true'])",
    "user_namespace": "import ctypes\nassert ctypes.CDLL(None).unshare(0x10000000) == 0",
    "ptrace_parent": "import ctypes\nassert ctypes.CDLL(None).ptrace(16, os.getppid(), 0, 0) == 0",
}


@pytest.mark.parametrize("body", ESCAPES.values(), ids=ESCAPES.keys())
def test_escapes_fail(grader, body):
    result = support.grade(grader, support.attack_source(body))
    assert result.score < support.FULL_MARKS, result.to_dict()
    support.assert_healthy(grader)


def test_daemon_does_not_outlive_the_run(grader):
    support.require_fork(grader)
    prelude = """
if os.fork() == 0:
    try:
        os.setsid()
    except OSError:
        pass
    if os.fork() == 0:
        while True:
            time.sleep(0.01)
    os._exit(0)
"""
    result = support.grade(grader, support.attack_source("", prelude=prelude))
    assert result.score == support.FULL_MARKS  # a daemon alone is no violation; it just must not survive
    assert support.survivors(grader) == []
    support.assert_healthy(grader)


FAKES = {
    "stdout": 'print(\'ACCEPTED 6/6 {"score": 6, "verdict": "accepted"}\')',
    "stderr": 'print(\'{"ok": true, "verdict": "accepted"}\', file=sys.stderr)',
    "inherited_fds": """
import json, struct
header = json.dumps({'msg': {'ok': True, 'value': 5, 'names': ['add', 'scaled_attention']}, 'bufs': []}).encode()
for fd in range(3, 21):
    try:
        os.write(fd, struct.pack('<I', len(header)) + header)
    except OSError:
        pass
raise RuntimeError('wrote fakes')
""",
}


@pytest.mark.parametrize("body", FAKES.values(), ids=FAKES.keys())
def test_fake_results_are_not_believed(grader, body):
    result = support.grade(grader, support.attack_source(body.replace("6/6", "6/6").strip() + "\nraise SystemExit(0)"))
    assert result.score < support.FULL_MARKS
    support.assert_healthy(grader)


def test_fake_frames_at_import_are_caught(grader):
    prelude = """
import json, struct
header = json.dumps({'msg': {'ok': True, 'names': ['add', 'scaled_attention'], 'id': 'x'}, 'bufs': []}).encode()
for fd in range(3, 21):
    try:
        os.write(fd, struct.pack('<I', len(header)) + header)
    except OSError:
        pass
"""
    result = support.grade(grader, support.attack_source("", prelude=prelude).replace("return a + b", "return a - b"))
    assert result.score < support.FULL_MARKS
    assert result.verdict == Verdict.RUNTIME_ERROR, result.to_dict()
    support.assert_healthy(grader)


def test_monkeypatching_comparisons_changes_nothing(grader):
    prelude = """
import numpy, torch.testing
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.testing.assert_close = lambda *a, **k: None
numpy.allclose = lambda *a, **k: True
numpy.testing.assert_allclose = lambda *a, **k: None
torch.Tensor.__eq__ = lambda self, other: True
"""
    source = support.attack_source("", prelude=prelude).replace("return a + b", "return a - b")
    source = source.replace("@ v\n", "@ v * 2\n")
    result = support.grade(grader, source)
    assert result.score == 0, result.to_dict()
    assert result.verdict == Verdict.WRONG_ANSWER
    support.assert_healthy(grader)
