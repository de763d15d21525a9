"""No channel between submissions through process ids, /proc or leftover processes; no fork without a memory cgroup.

Each submission (and each reference child) has a pid namespace of its own, whose pid 1 is a per-run init that reaps
the orphans a double fork leaves; without a memory cgroup, seccomp refuses new processes. Each attack here failed
before the change that closed it (what it printed then is in its docstring);
``test_fork_still_works_with_a_memory_cgroup`` is the control, which passed before and after.
"""

from __future__ import annotations

import time

import pytest

from graders.code.checks import CheckSpec
from graders.code.runner import CodeGrader
from graders.results import Verdict, Visibility
from graders.sandbox import pool
from graders.sandbox.student_process import StudentProcess
from tests.sandbox import support

# What a submission can learn of the processes around it. ``starttime`` and the scheduler's runtime tell a process
# started for this run from the zygote (started before the first submission, and busy for every one since).
OBSERVER = """
import os, threading

def _stat(pid):
    text = open(f'/proc/{pid}/stat').read()
    return text[text.rfind(')') + 2:].split()

def observe():
    seen = {}
    for entry in sorted(os.listdir('/proc')):
        if not entry.isdigit():
            continue
        try:
            fields = _stat(entry)
        except OSError:
            continue
        runtime_ms = None
        try:
            for line in open(f'/proc/{entry}/sched'):
                if line.startswith('se.sum_exec_runtime'):
                    runtime_ms = float(line.split(':')[1])
        except OSError:
            pass
        seen[entry] = {'starttime': int(fields[19]), 'runtime_ms': runtime_ms}
    return {
        'pid': os.getpid(),
        'ns_last_pid': int(open('/proc/sys/kernel/ns_last_pid').read()),
        'visible': sorted(int(p) for p in seen),
        'processes': seen,
        'own_starttime': int(_stat('self')[19]),
        'clock_ticks': os.sysconf('SC_CLK_TCK'),
    }

def busy():
    # Advances the pid counter of whatever namespace this runs in: 40 threads and 4 processes.
    threads = [threading.Thread(target=lambda: None) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for _ in range(4):
        try:
            pid = os.fork()
        except OSError:  # refused without a memory cgroup: the threads alone advance the counter then
            break
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    return True

def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""

NAMES = ("observe", "busy", "add", "scaled_attention")


def _spec(func) -> CheckSpec:
    return CheckSpec(func.__name__, func, 1.0, "answer", Visibility.HIDDEN, 30.0, "")


def _run(grader, source, func):
    problem = support.problem(entrypoints=NAMES)
    result = grader.grade(source=source, problem=problem, checks=[_spec(func)])
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    return result


def _observe(grader) -> dict:
    seen = {}

    def observe(student):
        seen.update(student.call("observe"))

    _run(grader, OBSERVER, observe)
    return seen


def _be_busy(grader) -> None:
    def busy(student):
        assert student.call("busy") is True

    _run(grader, OBSERVER, busy)


def test_pids_say_nothing_of_the_previous_submission(grader):
    """The pid and ns_last_pid a submission sees do not depend on what the submission before it did.

    Before per-run pid namespaces: {'pid': 5, 'ns_last_pid': 5, 'visible': [1, 2, 5]} after a quiet run, then
    {'pid': 51, 'ns_last_pid': 51, 'visible': [1, 2, 51]} after a run that started 40 threads and 4 processes.
    """
    quiet = _observe(grader)
    _be_busy(grader)
    after_busy = _observe(grader)
    keys = ("pid", "ns_last_pid", "visible")
    assert {k: quiet[k] for k in keys} == {k: after_busy[k] for k in keys}, (quiet, after_busy)
    assert after_busy["ns_last_pid"] == after_busy["pid"]  # nothing was created in this namespace before it
    support.assert_healthy(grader)


def test_proc_shows_neither_the_zygote_nor_earlier_runs(grader):
    """Every process a submission sees in /proc started with its own run; /proc/1 and /proc/2 are not the zygote.

    Before: /proc listed [1, 2, 97]: pid 1 bubblewrap's init and pid 2 the zygote, both started 2.8 s before the
    run (starttime 504028 against 504305), and the zygote's /proc/2/sched readable (se.sum_exec_runtime 1440 ms,
    growing with every submission of the slot).
    """
    _be_busy(grader)
    seen = _observe(grader)
    one_second = seen["clock_ticks"]
    for pid, facts in seen["processes"].items():
        assert facts["starttime"] >= seen["own_starttime"] - one_second, (pid, seen)
        if int(pid) != seen["pid"] and facts["runtime_ms"] is not None:
            assert facts["runtime_ms"] < 1000, (pid, seen)
    for pid in (1, 2):
        assert str(pid) not in seen["processes"] or pid == seen["pid"], seen
    assert seen["visible"] == [seen["pid"]], seen
    support.assert_healthy(grader)


DOUBLE_FORK = """
for _ in range(3):
    if os.fork() == 0:
        if os.fork() == 0:
            time.sleep(60)
        os._exit(0)
"""


def test_a_double_fork_is_reaped_promptly(grader, monkeypatch):
    """Cleaning up after a double-forked daemon takes milliseconds, not the reap loop's whole budget.

    Before: 'finish took [6.04, 0.05] s': the reap loop stopped collecting once the child's own status was in, so
    the orphans stayed zombies of the uid until its 5000 rounds ran out.
    """
    support.require_fork(grader)
    durations: list[float] = []
    finish = StudentProcess.finish

    def timed_finish(self):
        start = time.monotonic()
        try:
            return finish(self)
        finally:
            durations.append(time.monotonic() - start)

    monkeypatch.setattr(StudentProcess, "finish", timed_finish)
    for _ in range(2):
        result = support.grade(grader, support.attack_source("", prelude=DOUBLE_FORK))
        assert result.score == support.FULL_MARKS, result.to_dict()  # daemons are no violation; they must just go
    assert support.survivors(grader) == []  # waits for the background reaps too
    assert durations and max(durations) < 2.0, f"finish took {[round(d, 2) for d in durations]} s"
    support.assert_healthy(grader)


ORPHANS = """
import os, time

def orphans():
    for _ in range(5):
        if os.fork() == 0:
            if os.fork() == 0:
                os._exit(0)  # an orphan once its parent is gone: it must not stay a zombie
            time.sleep(0.05)
            os._exit(0)
        os.wait()
    time.sleep(0.3)
    zombies = []
    for entry in os.listdir('/proc'):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                text = open(f'/proc/{entry}/stat').read()
            except OSError:
                continue
            if text[text.rfind(')') + 2] == 'Z':
                zombies.append(int(entry))
    return zombies

def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""


def test_orphans_are_reaped_while_the_run_lives(grader):
    """Orphans of a double fork do not pile up as zombies (each would hold one of the run's 32 pids until the end).

    Before: the orphans went to the zygote (a subreaper that collects only when a run is reaped), and the submission
    saw five zombies: [114, 116, 118, 120, 122].
    """
    support.require_fork(grader)
    seen = {}

    def orphans(student):
        seen["zombies"] = student.call("orphans")

    problem = support.problem(entrypoints=("orphans", "add", "scaled_attention"))
    result = grader.grade(source=ORPHANS, problem=problem, checks=[_spec(orphans)])
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert seen["zombies"] == [], seen
    support.assert_healthy(grader)


FORK_AND_THREAD = """
import os, threading

def try_both():
    out = {}
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        out['fork'] = 'ok'
    except OSError as exc:
        out['fork'] = exc.errno
    box = []
    t = threading.Thread(target=lambda: box.append(1))
    t.start()
    t.join()
    out['thread'] = 'ok' if box == [1] else 'no'
    return out

def add(a, b):
    return a + b

def scaled_attention(q, k, v, mask=None):
    return q
"""


@pytest.fixture
def grader_without_cgroups(monkeypatch, data_dir):
    """A grader on a host without a writable memory controller (forced): memory is bounded by RLIMIT_AS alone."""
    support.require_jail()
    monkeypatch.setattr(pool.cgroups, "detect", lambda: None)
    with CodeGrader(support.jail_config(hidden_paths=[data_dir])) as g:
        assert g._pool.slots[0].cgroups is None
        yield g


def test_fork_is_refused_without_a_memory_cgroup(grader_without_cgroups):
    """Under RLIMIT_AS alone every process gets its own budget: a submission may start threads but no process.

    Before: {'fork': 'ok', 'thread': 'ok'}: 32 processes could each map the whole memory budget.
    """
    seen = {}

    def both(student):
        seen.update(student.call("try_both"))

    problem = support.problem(entrypoints=("try_both", "add", "scaled_attention"))
    result = grader_without_cgroups.grade(source=FORK_AND_THREAD, problem=problem, checks=[_spec(both)])
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert seen == {"fork": 1, "thread": "ok"}, seen  # EPERM from seccomp
    support.assert_healthy(grader_without_cgroups)


def test_fork_still_works_with_a_memory_cgroup(grader):
    """Where a cgroup bounds the whole run, processes are allowed (the pids group and RLIMIT_NPROC count them)."""
    support.require_fork(grader)
    seen = {}

    def both(student):
        seen.update(student.call("try_both"))

    problem = support.problem(entrypoints=("try_both", "add", "scaled_attention"))
    result = grader.grade(source=FORK_AND_THREAD, problem=problem, checks=[_spec(both)])
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert seen == {"fork": "ok", "thread": "ok"}, seen
