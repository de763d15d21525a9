"""Resource attacks and exits: each ends with the verdict that names it, and the worker stays healthy."""

from __future__ import annotations

import shutil

import pytest

from graders.code.sanitise import DID_NOT_FINISH
from graders.results import Verdict
from tests.sandbox import support


def _expect(grader, source, verdicts, **limits):
    result = support.grade(grader, source, **limits)
    assert result.score < support.FULL_MARKS, result.to_dict()
    assert result.verdict in verdicts, result.to_dict()
    assert len(result.checks) == 4 and result.max_score == support.FULL_MARKS  # every check reported
    support.assert_healthy(grader)
    return result


def test_infinite_loop_ignoring_signals_times_out(grader):
    body = """
for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGXCPU, signal.SIGHUP, signal.SIGALRM):
    signal.signal(sig, signal.SIG_IGN)
while True:
    pass
"""
    result = _expect(grader, support.attack_source(body), {Verdict.TIMEOUT}, time_s=1)
    assert "ran past the 1 s limit" in result.message
    # The hidden check after it runs in a child of its own, and says that run did not finish, without the cause.
    assert result.checks[1].feedback == DID_NOT_FINISH


def test_infinite_loop_at_import_times_out(grader):
    result = _expect(grader, support.attack_source("", prelude="while True:\n    pass"), {Verdict.TIMEOUT}, time_s=1)
    assert "ran past the 1 s limit" in result.message


def test_memory_bomb_hits_the_memory_limit(grader):
    body = "hog = torch.ones(2 * 1024**3 // 8, dtype=torch.float64)"
    result = _expect(grader, support.attack_source(body), {Verdict.MEMORY_LIMIT}, memory_mb=256)
    assert "256 MiB" in result.message or "memory" in result.checks[0].feedback.lower()


def test_growing_memory_hits_the_memory_limit(grader):
    body = "hog = []\nwhile True:\n    hog.append(bytearray(16 * 1024 * 1024))"
    _expect(grader, support.attack_source(body), {Verdict.MEMORY_LIMIT}, memory_mb=256)


def test_fork_bomb_is_contained(grader):
    body = """
while True:
    try:
        os.fork()
    except OSError:
        pass
"""
    _expect(grader, support.attack_source(body), {Verdict.TIMEOUT, Verdict.RUNTIME_ERROR}, time_s=2)
    assert support.survivors(grader) == []


def test_output_flood_hits_the_output_limit(grader):
    body = "while True:\n    print('x' * 1000)"
    result = _expect(grader, support.attack_source(body), {Verdict.OUTPUT_LIMIT})
    assert "16 KiB" in result.message


def test_filling_the_disk_is_bounded(grader):
    free_before = shutil.disk_usage("/").free
    body = """
with open('fill', 'wb') as f:
    for _ in range(10_000):
        f.write(b'x' * 1024 * 1024)
"""
    _expect(grader, support.attack_source(body), {Verdict.PARTIAL, Verdict.RUNTIME_ERROR})
    assert shutil.disk_usage("/").free > free_before - 256 * 1024 * 1024


EXITS = {
    "sys_exit_at_import": ("", "sys.exit(0)", Verdict.RUNTIME_ERROR),
    "os_exit_at_import": ("", "os._exit(0)", Verdict.RUNTIME_ERROR),
    "sys_exit_in_call": ("sys.exit(0)", "", Verdict.PARTIAL),
    "os_exit_in_call": ("os._exit(0)", "", Verdict.RUNTIME_ERROR),
    "segfault_in_call": ("import ctypes\nctypes.string_at(0)", "", Verdict.RUNTIME_ERROR),
}


@pytest.mark.parametrize(("body", "prelude", "verdict"), EXITS.values(), ids=EXITS.keys())
def test_exits_are_runtime_errors(grader, body, prelude, verdict):
    _expect(grader, support.attack_source(body, prelude=prelude), {verdict})
