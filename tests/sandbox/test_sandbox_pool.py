"""The slot's pool of pre-forked, locked-down children (graders/sandbox/prefork.py), attacked.

A pooled child is forked and locked down before any submission arrives, and serves exactly one run. These tests
check that it carries nothing of an earlier run (pids, /proc, files, environment, fds, module state, memory), that
its limits are the submission's and not the pool's ceiling, and that the pool heals: a child killed while it waits
is replaced, a crash of student code is followed by a refill, and a submission that finds the pool empty is still
graded. Most run against the slot itself (``Slot.spawn`` / ``release``), with a probe the child runs and whose
observations come back as data.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
from collections.abc import Iterator
from typing import Any

import pytest

from graders.code.runner import CodeGrader
from graders.results import Verdict
from graders.sandbox import codec
from graders.sandbox.config import RunLimits
from graders.sandbox.slot import ALONE, REFERENCE, ROLES, STUDENT, Slot
from graders.sandbox.student_process import StudentProcess
from tests.sandbox import support

PROBE = r'''
import builtins, os, resource, sys, threading, time

def probe():
    fds = sorted(int(x) for x in os.listdir("/proc/self/fd"))
    vm = [l for l in open("/proc/self/status") if l.startswith("VmSize:")][0].split()[1]
    names = ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_AS", "RLIMIT_CORE")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (4096, 4096))
        raised = "raised"
    except (ValueError, OSError) as exc:
        raised = type(exc).__name__
    return {
        "pid": os.getpid(),
        "fds": fds,
        "env": sorted(f"{k}={v}" for k, v in os.environ.items() if k not in ("HOME", "TMPDIR")),
        "files": sorted(os.listdir(".")),
        "procs": sorted(x for x in os.listdir("/proc") if x.isdigit()),
        "ns_last_pid": open("/proc/sys/kernel/ns_last_pid").read().strip(),
        "marker": getattr(builtins, "LEFT_BY_AN_EARLIER_RUN", None),
        "modules": sorted(m for m in sys.modules if m.startswith("left_")),
        "threads": threading.active_count(),
        "rlimits": {n: list(resource.getrlimit(getattr(resource, n))) for n in names},
        "vm_kb": int(vm),
        "raise_nofile": raised,
    }

def dirty():
    """Leave behind whatever a run can: a file, an open fd, env, module state, threads, processes."""
    open("left_behind", "w").write("x" * 1000)
    keep = os.open("left_behind", os.O_RDONLY)
    os.environ["LEFT_BY_AN_EARLIER_RUN"] = "1"
    builtins.LEFT_BY_AN_EARLIER_RUN = keep
    sys.modules["left_module"] = sys
    for _ in range(8):
        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    hog = bytearray(64 * 1024 * 1024)
    builtins.HOG = hog
    return probe()
'''

BIG = RunLimits(memory_mb=1024, cpu_s=120, nproc=32, fsize_mb=64, nofile=128)
SMALL = RunLimits(memory_mb=256, cpu_s=7, nproc=16, fsize_mb=8, nofile=64, output_kb=8)
CAPS = codec.Caps()


@pytest.fixture
def slot(grader: CodeGrader) -> Iterator[Slot]:
    the_slot = grader._pool.slots[0]
    the_slot.settle()
    yield the_slot
    the_slot.settle()


@contextlib.contextmanager
def child(slot: Slot, limits: RunLimits = BIG, role: str = STUDENT, source: str = PROBE) -> Iterator[StudentProcess]:
    process = slot.spawn(limits, role)
    try:
        reply = process.request({"op": "load"}, [source.encode()], 30).msg
        assert reply.get("ok") is True, reply
        yield process
    finally:
        slot.release(process)


def call(process: StudentProcess, name: str) -> Any:
    tree, buffers = codec.encode_value(((), {}), CAPS)
    frame = process.request({"op": "call", "name": name, "args": tree["v"][0], "kwargs": tree["v"][1]}, buffers, 30)
    assert frame.msg.get("ok") is True, frame.msg
    return codec.decode_value(frame.msg["value"], frame.buffers, CAPS)


def waiting_pids(slot: Slot) -> set[int]:
    return set(slot.pool.pooled_pids())


def comparable(seen: dict[str, Any]) -> dict[str, Any]:
    """What must be the same in every fresh child (the rest depends on the limits or is drawn per child)."""
    return {k: seen[k] for k in ("pid", "fds", "env", "files", "procs", "ns_last_pid", "marker", "modules", "threads")}


@pytest.mark.parametrize("role", [STUDENT, ALONE])
def test_a_pooled_child_carries_nothing_of_an_earlier_run(slot, role):
    """A child that waited in the pool while a dirty run went on sees what a first child sees."""
    with child(slot, role=role) as first:
        clean = call(first, "probe")
    slot.settle()
    waited = waiting_pids(slot)  # these children wait through the dirty run below
    assert waited, "the pool holds no waiting child"
    with child(slot, role=role) as dirty:
        assert dirty.h.host_pid in waited  # taken from the pool, not forked on demand
        left = call(dirty, "dirty")
    assert left["files"] == ["left_behind"] and left["marker"] is not None and left["threads"] > 8  # the probe sees
    for _ in range(3):  # every child the pool still held, and those forked after
        with child(slot, role=role) as later:
            seen = call(later, "probe")
        assert comparable(seen) == comparable(clean)
    assert clean["pid"] == 2 and clean["files"] == [] and clean["marker"] is None


def test_no_child_serves_twice(slot, grader):
    """The visible checks and the hidden ones of every submission get children no earlier run had."""
    served: list[int] = []
    spawn = Slot.spawn

    def recording(self, limits, role=STUDENT):
        process = spawn(self, limits, role)
        served.append(process.h.host_pid)
        return process

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Slot, "spawn", recording)
        for _ in range(3):
            assert support.grade(grader, support.GOOD_SOURCE).score == support.FULL_MARKS
    assert len(served) == 3 * 2  # per submission, 1 visible child + 1 that its 3 hidden checks share
    assert len(set(served)) == len(served)


def test_limits_are_the_submissions_not_the_pools_ceiling(slot):
    """A child forked at the pool's ceiling serves a smaller submission with its smaller limits, unraisable."""
    with child(slot, BIG):
        pass  # the ceiling is now at least BIG
    slot.settle()
    waited = waiting_pids(slot)
    with child(slot, SMALL) as process:
        assert process.h.host_pid in waited
        seen = call(process, "probe")
        rl = seen["rlimits"]
        assert rl["RLIMIT_CPU"] == [7, 8]
        assert rl["RLIMIT_NOFILE"] == [64, 64]
        assert rl["RLIMIT_FSIZE"] == [8 << 20, 8 << 20]
        assert rl["RLIMIT_NPROC"] == [16, 16]
        assert rl["RLIMIT_CORE"] == [0, 0]
        assert seen["raise_nofile"] == "ValueError"  # lowered hard limits stay lowered
        if process.h.cgroup is not None:
            memory = process.h.cgroup.memory
            assert int((memory / "memory.limit_in_bytes").read_text()) == 256 << 20
            assert process.h.cgroup.pids is not None
            assert (process.h.cgroup.pids / "pids.max").read_text().strip() == "16"
        else:  # the memory bound is RLIMIT_AS: this process's size now plus the budget, not the ceiling's
            assert rl["RLIMIT_AS"][1] <= (seen["vm_kb"] << 10) + (256 << 20)


def test_a_pooled_childs_memory_limit_is_the_submissions(grader):
    """After a grading at 1 GiB, a submission with 256 MiB runs out at 256 MiB (and the same code fits in 1 GiB)."""
    grab = "hog = bytearray(400 * 1024 * 1024)\nhog[::4096] = b'x' * len(hog[::4096])"
    roomy = support.grade(grader, support.attack_source(grab), memory_mb=1024)
    assert roomy.score == support.FULL_MARKS, roomy.to_dict()
    grader._pool.settle()
    tight = support.grade(grader, support.attack_source(grab), memory_mb=256)
    assert tight.score < support.FULL_MARKS
    assert tight.verdict in (Verdict.MEMORY_LIMIT, Verdict.RUNTIME_ERROR), tight.to_dict()
    support.assert_healthy(grader)


def test_a_child_killed_while_waiting_is_replaced(slot, grader):
    """Kill every waiting child, of every role: the next submission is graded in full and the pool fills again."""
    victims = waiting_pids(slot)
    assert len(victims) >= len(ROLES)
    zygote = slot.zygote
    for pid in victims:
        os.kill(pid, signal.SIGKILL)
    result = support.grade(grader, support.GOOD_SOURCE)
    assert result.score == support.FULL_MARKS, result.to_dict()
    assert slot.zygote is zygote  # replaced by the pool, not by restarting the zygote
    assert support.survivors(grader) == []  # settles: the dead children are reaped, fresh ones wait
    refilled = waiting_pids(slot)
    assert refilled and not refilled & victims
    for role in (STUDENT, REFERENCE):
        with child(slot, role=role) as process:
            assert call(process, "probe")["pid"] == 2


def test_the_pool_refills_after_student_code_crashes(slot, grader):
    crash = support.attack_source("os.kill(os.getpid(), signal.SIGSEGV)")
    for _ in range(2):
        result = support.grade(grader, crash)
        assert result.score < support.FULL_MARKS
    slot.settle()
    assert len(waiting_pids(slot)) >= len(ROLES)
    assert support.survivors(grader) == []
    support.assert_healthy(grader)


def test_a_submission_that_finds_the_pool_empty_is_graded(slot, grader):
    """With the housekeeper held and every waiting child taken, children are forked on the spot."""
    with slot.pool.hold():
        drained: list[StudentProcess] = []
        for role in ROLES:
            while any(w.seat.role == role for q in slot.pool._waiting.values() for w in q):
                drained.append(slot.spawn(BIG, role))
        assert waiting_pids(slot) == set()
        for process in drained:
            slot.release(process)
        result = support.grade(grader, support.GOOD_SOURCE)
        assert result.score == support.FULL_MARKS, result.to_dict()
    assert support.survivors(grader) == []


def test_a_grader_without_a_pool_forks_each_child_on_demand(data_dir):
    with CodeGrader(support.jail_config(prefork=0, prefork_max=0, hidden_paths=[data_dir])) as grader:
        for _ in range(2):
            assert support.grade(grader, support.GOOD_SOURCE).score == support.FULL_MARKS
        assert grader._pool.slots[0].pool.pooled_pids() == []
        assert support.survivors(grader) == []


def _memory_holds(pid: int, needle: bytes) -> bool:
    """Whether any private writable mapping of ``pid`` holds ``needle`` (read as root through /proc/PID/mem)."""
    with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if not fields[1].startswith("rw") or (len(fields) > 5 and fields[5].startswith("/")):
                continue  # only anonymous and heap mappings: where Python keeps the objects it creates
            start, end = (int(x, 16) for x in fields[0].split("-"))
            with contextlib.suppress(OSError):
                mem.seek(start)
                if needle in mem.read(end - start):
                    return True
    return False


def test_waiting_children_hold_nothing_of_a_submission(slot, grader):
    """A submission's source reaches only the child serving it: never the waiting ones, never the zygote."""
    token = f"SECRET_{secrets.token_hex(12)}"
    source = support.GOOD_SOURCE + f'\nTOKEN = "{token}"\n'
    with child(slot, source=source) as serving:
        assert _memory_holds(serving.h.host_pid, token.encode())  # the scan finds it where it is
        waiting = waiting_pids(slot)
        assert waiting
        for pid in waiting:
            assert not _memory_holds(pid, token.encode())
    assert support.grade(grader, source).score == support.FULL_MARKS
    slot.settle()
    assert slot.zygote is not None
    for pid in waiting_pids(slot) | {slot.zygote.host_pid}:
        assert not _memory_holds(pid, token.encode())


def test_a_waiting_childs_uid_is_drawn_among_free_seats(slot):
    """Several uids serve a role, so a child's uid does not count the children of its role made before it."""
    seen = set()
    for _ in range(12):
        with child(slot, role=ALONE) as process:
            seen.add(process.h.uid)
            assert re.fullmatch(r"/w/alone-\d+", process.h.workdir)
            assert call(process, "probe")["files"] == []
    assert len(seen) >= 2
