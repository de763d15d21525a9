"""Class 7 of issue 9: resource isolation that does not depend on the host's luck.

Each slot's children share one cgroup with a CPU share (v1 ``cpu.shares`` + CFS quota, v2 ``cpu.weight`` +
``cpu.max``): however many processes a CPU-bound submission starts, its slot weighs as one task against the server
and the other slots, and uses at most one core. Before, there was no CPU controller at all (fairness came from the
kernel's autogroup setting): ``slot.cgroups`` had no CPU settings and the hog's CPU time was charged to nothing of
the slot's. Memory is bounded per child for the whole run, forks included, under every isolation level: a group
(v1 or v2) for all of the run's processes, or, without one, no new process at all.

No assertion here is timed: the hogs burn a fixed amount of CPU time (``time.process_time``, not the wall clock),
and the test reads the kernel's accounting of it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from graders.code.checks import CheckSpec
from graders.code.runner import CodeGrader
from graders.results import Verdict, Visibility
from graders.sandbox import cgroup_common, cgroup_v2, cgroups, pool
from tests.sandbox import support

# hog() forks three helpers; each of the four processes burns 0.25 s of CPU of its own, then the parent reports.
HOG = """
import os, time

def _burn(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:
        pass

def hog():
    helpers = []
    for _ in range(3):
        pid = os.fork()
        if pid == 0:
            _burn(0.25)
            os._exit(0)
        helpers.append(pid)
    _burn(0.25)
    return [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in helpers]

def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""
HOG_CPU_USEC = 4 * 250_000


def _check(func) -> CheckSpec:
    return CheckSpec(func.__name__, func, 1.0, "answer", Visibility.VISIBLE, 180.0, "")


@pytest.fixture(scope="module")
def two_slots(data_dir):
    support.require_jail()
    with CodeGrader(support.jail_config(slots=2, hidden_paths=[data_dir])) as g:
        yield g


def test_each_slot_has_a_cpu_share_and_is_charged_with_its_hog(two_slots):
    """Two slots run a four-process CPU hog at the same time; each slot's cgroup holds its own hog's CPU time."""
    slots = two_slots._pool.slots
    if slots[0].cgroups is None:
        support.require_fork(two_slots)  # skips, naming why: no cgroup here, and then no fork either
    groups = [slot.cgroups for slot in slots]
    level = groups[0].version
    for group in groups:
        settings = group.cpu_settings()
        if level == "v1":
            assert settings["cpu.shares"] == str(cgroup_common.SLOT_CPU_SHARES), settings
            assert settings["cpu.cfs_quota_us"] == str(cgroup_common.SLOT_CPU_QUOTA_US), settings
            assert settings["cpu.cfs_period_us"] == str(cgroup_common.SLOT_CPU_PERIOD_US), settings
        elif settings:  # v2 without a delegated cpu controller has no settings to read
            assert settings["cpu.weight"] == str(cgroup_common.SLOT_CPU_WEIGHT), settings
    before = [group.cpu_usage_usec() for group in groups]
    if None in before:
        pytest.skip("no CPU accounting for slots here (cgroup v1 without a writable cpuacct controller)")
    together = threading.Barrier(2)  # both gradings hold their slot before either hogs: two distinct slots
    seen: list[list[int]] = []

    def hog(student):
        together.wait(timeout=120)
        seen.append(student.call("hog"))

    problem = support.problem(entrypoints=("hog", "add", "scaled_attention"), time_s=60)  # one core, loaded host
    with ThreadPoolExecutor(max_workers=2) as ex:
        results = list(ex.map(lambda _: two_slots.grade(source=HOG, problem=problem, checks=[_check(hog)]), [0, 1]))
    for result in results:
        assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert seen == [[0, 0, 0], [0, 0, 0]], seen
    after = [group.cpu_usage_usec() for group in groups]
    for b, a in zip(before, after, strict=True):
        assert a is not None and b is not None
        assert a - b >= HOG_CPU_USEC, (before, after)  # all four processes of the hog were in the slot's group
    support.assert_healthy(two_slots)


# Three helpers each map and touch 60% of the run's budget, then wait: with one budget per process (RLIMIT_AS
# alone, and fork allowed) they would hold 1.8 budgets at once.
MULTIPLY = """
import os, time

def multiply(mb):
    helpers = []
    for _ in range(3):
        try:
            pid = os.fork()
        except OSError as exc:
            return {'fork': exc.errno}
        if pid == 0:
            block = bytearray(int(mb * 0.6) << 20)
            for i in range(0, len(block), 4096):
                block[i] = 1
            time.sleep(3)
            os._exit(0)
        helpers.append(pid)
    return {'exits': [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in helpers]}

def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""


@pytest.fixture(params=["detected", "threads-only"])
def any_level(request, monkeypatch, data_dir):
    """A grader at the isolation level this host gives (cgroup v2 or v1), and one forced to have no cgroup."""
    support.require_jail()
    if request.param == "threads-only":
        monkeypatch.setattr(pool.cgroups, "detect", lambda: None)
    with CodeGrader(support.jail_config(hidden_paths=[data_dir])) as g:
        yield request.param, g


def test_memory_cannot_be_multiplied_by_forking(any_level):
    """Under every level the run's processes together stay within one budget (issue 9: 4.5 GiB against 1 GiB)."""
    name, grader = any_level
    hierarchy = grader._pool.slots[0].cgroups
    seen: dict = {}

    def multiply(student):
        seen.update(student.call("multiply", 256))

    problem = support.problem(entrypoints=("multiply", "add", "scaled_attention"), memory_mb=256, time_s=60)
    result = grader.grade(source=MULTIPLY, problem=problem, checks=[_check(multiply)])
    if hierarchy is None:
        assert name == "threads-only" or cgroups.detect() is None
        assert seen == {"fork": 1}, (seen, result.to_dict())  # EPERM: no process, so no second budget
    else:
        # One group for the whole run: the OOM killer (v2: the whole group) ends helpers, or the run itself.
        held = seen.get("exits")
        assert result.verdict == Verdict.MEMORY_LIMIT or (held is not None and held.count(0) <= 1), (
            seen,
            result.to_dict(),
        )
    support.assert_healthy(grader)


DAEMON = """
import os, time

def daemon():
    if os.fork() == 0:
        if os.fork() == 0:
            time.sleep(600)  # a grandchild that outlives its parent: only the cgroup (and the pid namespace) find it
        os._exit(0)
    return 'spawned'
"""


@pytest.fixture
def grader_on_v2_plumbing(monkeypatch, data_dir):
    """A grader whose slots and children sit in cgroup v2 groups with whatever controllers this host's v2 offers.

    On a hybrid host (v1 holds memory, pids and cpu) that is the v2 plumbing alone: groups, moves, accounting,
    ``cgroup.kill``, removal, under a real jail; the limits then come from nothing but rlimits (RLIMIT_NPROC still
    bounds the processes). Where v2 offers memory and pids, this is the pool's own choice anyway.
    """
    support.require_jail()
    probe = cgroups.CgroupV2.detect(required=())
    if probe is None:
        pytest.skip("no writable cgroup2 mount here")
    offered = tuple(sorted(cgroup_v2.controllers_of(probe.own)))
    monkeypatch.setattr(pool.cgroups, "detect", lambda: cgroups.CgroupV2.detect(required=(), wanted=offered))
    with CodeGrader(support.jail_config(hidden_paths=[data_dir])) as g:
        assert g._pool.slots[0].cgroups is not None and g._pool.slots[0].cgroups.version == "v2"
        yield g


def test_a_whole_grading_runs_in_cgroup_v2_groups_and_leaves_nothing(grader_on_v2_plumbing):
    grader = grader_on_v2_plumbing
    slot_group = grader._pool.slots[0].cgroups
    before = slot_group.cpu_usage_usec()
    seen: list = []

    def hog(student):
        seen.append(student.call("hog"))
        seen.append(student.call("daemon"))

    problem = support.problem(entrypoints=("hog", "daemon", "add", "scaled_attention"), time_s=60)
    result = grader.grade(source=HOG + DAEMON, problem=problem, checks=[_check(hog)])
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert seen == [[0, 0, 0], "spawned"], seen
    after = slot_group.cpu_usage_usec()
    assert before is not None and after is not None and after - before >= HOG_CPU_USEC, (before, after)
    # Every child's leaf group is gone with its processes (the daemon's grandchild included); the slot's stays, and
    # so do the groups of the children waiting in the pool (forked ahead, no student code yet).
    assert support.survivors(grader) == []  # waits for the background reaps
    waiting = {p.h.cgroup.path for p in grader._pool.slots[0].pool.pooled_processes()}  # type: ignore[union-attr]
    assert {p for p in slot_group.path.iterdir() if p.is_dir()} == waiting
    support.assert_healthy(grader)
