"""time(), time_reference() and timing sessions: fresh inputs per run, instructor code timed in a clean child.

No timed assertions: the tests check what each run receives and where it runs, never how long it takes.
"""

from __future__ import annotations

import torch

from checklibs.attention.sequential import Plan
from checklibs.attention.timing import timing_check
from graders.code.checks import CheckFailed, CheckSpec
from graders.results import Verdict, Visibility
from graders.sandbox import procfs
from graders.sandbox.student_process import StudentProcess
from tests.sandbox import support

# A student that caches by id(), by _version and by content, and counts the calls it could have answered from cache.
CACHING_SOURCE = """
import builtins, hashlib, torch
builtins.STUDENT_WAS_HERE = True
_seen_ids, _seen_content, _hits, _keep = set(), set(), [0], []

def add(a, b):
    key = hashlib.sha256(a.numpy().tobytes() + b.numpy().tobytes()).hexdigest()
    if (id(a), a._version) in _seen_ids or key in _seen_content:
        _hits[0] += 1
    _seen_ids.add((id(a), a._version))
    _keep.append(a)  # keeps every id taken: a later hit by id is a real one
    _seen_content.add(key)
    return a + b

def hits():
    return _hits[0]

def calls():
    return len(_seen_content)

def scaled_attention(q, k, v, mask=None):
    return torch.softmax(q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5, dim=-1) @ v
"""

# Instructor code: refuses to run beside student code, and sees no process but its own (its own pid namespace).
REFERENCE_SOURCE = """
import builtins, os, torch

def _others():
    me = os.getuid()
    others = []
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                if os.stat(f'/proc/{pid}').st_uid != me:
                    others.append(pid)
            except OSError:
                continue
    return others

def reference_add(a, b):
    if hasattr(builtins, 'STUDENT_WAS_HERE'):
        raise RuntimeError('the reference child ran student code')
    if _others():
        raise RuntimeError(f'the reference child sees other processes: {_others()}')
    return a + b
"""


def _spec(func) -> CheckSpec:
    return CheckSpec(func.__name__, func, 1.0, "answer", Visibility.HIDDEN, 30.0, "")


def _run(grader, source, *funcs):
    extra = ("hits", "calls") if source == CACHING_SOURCE else ()
    problem = support.problem(entrypoints=("add", "scaled_attention", *extra))
    return grader.grade(source=source, problem=problem, checks=[_spec(f) for f in funcs])


def test_time_sends_fresh_inputs_each_run(grader):
    seen = {}

    def timing(student):
        x = torch.randn(64, dtype=torch.float64)
        t = student.time("add", [x, x.clone()], warmup=2, repeat=5)
        seen["times"], seen["hits"], seen["calls"] = t.times_s, student.call("hits"), student.call("calls")

    result = _run(grader, CACHING_SOURCE, timing)
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert len(seen["times"]) == 5 and all(s > 0 for s in seen["times"])
    assert seen["calls"] == 7  # every run, warm-up included, was its own call with inputs never seen before
    assert seen["hits"] == 0


def test_time_reference_runs_in_a_clean_child_while_the_student_is_stopped(grader, monkeypatch):
    seen = {}
    paused: list[StudentProcess] = []
    states_during: list[list[str | None]] = []  # the student's processes, at every request to the reference child
    pause, request = StudentProcess.pause, StudentProcess.request

    def pause_and_note(self):
        pause(self)
        paused.append(self)

    def request_and_look(self, *args, **kwargs):
        if paused and self is not paused[-1]:
            states_during.append([procfs.state(pid) for pid in paused[-1].members()])
        return request(self, *args, **kwargs)

    monkeypatch.setattr(StudentProcess, "pause", pause_and_note)
    monkeypatch.setattr(StudentProcess, "request", request_and_look)

    def reference(student):
        x = torch.randn(32, dtype=torch.float32)
        t = student.time_reference(REFERENCE_SOURCE, "reference_add", [x, x], warmup=1, repeat=3)
        seen["times"] = t.times_s
        seen["after"] = student.call("add", torch.ones(2), torch.ones(2))  # the student was resumed

    result = _run(grader, CACHING_SOURCE, reference)
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert len(seen["times"]) == 3 and all(s > 0 for s in seen["times"])
    assert torch.equal(seen["after"], torch.full((2,), 2.0))
    assert len(states_during) >= 5  # load, warm-up, three timed runs
    assert all(states and all(state in ("T", "t") for state in states) for states in states_during), states_during
    support.assert_healthy(grader)


def test_time_reference_errors_are_the_checks_not_the_students(grader):
    def broken(student):
        student.time_reference("def f(x):\n    raise ValueError('instructor bug')\n", "f", [1])

    def missing(student):
        student.time_reference("x = 1\n", "f", [1])

    def still_works(student):
        if student.call("add", 2, 3) != 5:
            raise CheckFailed("the student's process did not survive")

    result = _run(grader, support.GOOD_SOURCE, broken, missing, still_works)
    feedback = [c.feedback for c in result.checks]
    assert feedback[0] == feedback[1] == "the check could not run (an error in the check, not in your code)"
    assert result.checks[2].passed, result.to_dict()
    support.assert_healthy(grader)


# Instructor code for a timing session: like REFERENCE_SOURCE, and it counts its calls, so a second child would show.
SESSION_REFERENCE_SOURCE = (
    REFERENCE_SOURCE
    + """
_calls = [0]

def reference_count(a, calls_before):
    reference_add(a, a)  # clean, and every process of the student stopped
    if _calls[0] != calls_before:
        raise RuntimeError(f'a new reference child: {_calls[0]} calls before, expected {calls_before}')
    _calls[0] += 1
    return a
"""
)


def test_a_timing_session_keeps_one_clean_reference_child_and_stops_the_student_for_it(grader):
    seen = {"results": [], "times": []}

    def session(student):
        x = torch.ones(3)
        with student.timing_session(SESSION_REFERENCE_SOURCE, "reference_count") as timed:
            for i in range(4):
                call = timed.student("add", [x, x * i])  # the student runs again for its own calls
                seen["times"] += [call.seconds, timed.reference([x, i])]
                seen["results"].append(call.result())
        seen["after"] = student.call("add", torch.ones(2), torch.ones(2))  # resumed after the session

    result = _run(grader, CACHING_SOURCE, session)
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    assert [r.tolist() for r in seen["results"]] == [[1.0] * 3, [2.0] * 3, [3.0] * 3, [4.0] * 3]
    assert len(seen["times"]) == 8 and all(s > 0 for s in seen["times"])
    assert torch.equal(seen["after"], torch.full((2,), 2.0))
    support.assert_healthy(grader)


# A correct attention that answers one call, BAD_AT, with garbage at once, and counts the calls it received.
COUNTING_ATTENTION = """
import torch

_calls = [0]
BAD_AT = {bad_at}


def scaled_attention(q, k, v, key_valid=None, causal=False):
    call = _calls[0]
    _calls[0] += 1
    if call == BAD_AT:
        return torch.zeros(*q.shape[:-1], v.shape[-1]), torch.zeros(*q.shape[:-1], k.shape[-2])
    scores = q @ k.transpose(-1, -2) / q.shape[-1] ** 0.5
    allowed = key_valid[:, None, None, :]
    weights = torch.softmax(scores.masked_fill(~allowed, float("-inf")), dim=-1).masked_fill(~allowed, 0.0)
    return weights @ v, weights


def calls():
    return _calls[0]
"""


def test_which_calls_are_verified_cannot_be_seen_from_inside(grader):
    # By construction: every call is verified, and only after the last call of its batch, so the calls the
    # student receives do not depend on which one was wrong: the trusted side reacted to nothing in between.
    plan = Plan(first=5, step=4, most=9)
    timing = timing_check(sizes=(16, 32), plan=plan).__autograder_check__  # type: ignore[attr-defined]
    problem = support.problem(entrypoints=("scaled_attention", "calls"))
    received = {}
    for bad_at in (0, 2, 5):
        counted = {}

        def count(student, counted=counted):
            counted["calls"] = student.call("calls")

        source = COUNTING_ATTENTION.format(bad_at=bad_at)
        # Visible, like the timing check: it runs in the same child and sees the calls that child received.
        counter = CheckSpec("count", count, 1.0, "answer", Visibility.VISIBLE, 10.0, "")
        result = grader.grade(source=source, problem=problem, checks=[timing, counter])
        assert result.checks[0].score == 0.0, result.to_dict()
        assert "one of the calls made while timing" in result.checks[0].feedback
        received[bad_at] = counted["calls"]
    assert set(received.values()) == {1 + plan.first}, received  # the warm-up and the first batch, whatever failed
    support.assert_healthy(grader)


def test_timing_session_reference_errors_are_the_checks_not_the_students(grader):
    def broken(student):
        with student.timing_session("def f(x):\n    raise ValueError('instructor bug')\n", "f") as timed:
            timed.student("add", [torch.ones(2), torch.ones(2)])
            timed.reference([1])

    def missing(student):
        with student.timing_session("x = 1\n", "f"):
            pass

    def still_works(student):
        if student.call("add", 2, 3) != 5:
            raise CheckFailed("the student's process did not survive")

    result = _run(grader, support.GOOD_SOURCE, broken, missing, still_works)
    feedback = [c.feedback for c in result.checks]
    assert feedback[0] == feedback[1] == "the check could not run (an error in the check, not in your code)"
    assert result.checks[2].passed, result.to_dict()
    support.assert_healthy(grader)


# A student whose calls do a known amount of work (CPU time, on the calling thread or on a thread of its own), then
# sleep, and try to tell the grader that they took no time at all.
WORK_SOURCE = """
import threading, time

time.process_time = time.thread_time = time.perf_counter = lambda: 0.0  # what the child could forge: unused
_clock = time.clock_gettime
BURN_S, SLEEP_S = 0.03, 0.15


def _burn():
    end = _clock(time.CLOCK_THREAD_CPUTIME_ID) + BURN_S
    while _clock(time.CLOCK_THREAD_CPUTIME_ID) < end:
        pass


def work_then_sleep(a):
    _burn()
    time.sleep(SLEEP_S)
    return a


def work_in_a_thread(a):
    worker = threading.Thread(target=_burn)
    worker.start()
    worker.join()
    return a
"""


def test_a_timed_call_counts_its_work_not_its_sleep_nor_the_childs_own_clocks(grader):
    """The work measured by the trusted side: 30 ms of CPU are counted, a 150 ms sleep is not (wall time was)."""
    seen: dict[str, list[tuple[float, float | None]]] = {"sleep": [], "thread": []}

    def session(student):
        x = torch.ones(3)
        with student.timing_session(SESSION_REFERENCE_SOURCE, "reference_add") as timed:
            for _ in range(2):
                call = timed.student("work_then_sleep", [x])
                seen["sleep"].append((call.seconds, call.wall_seconds))
                call = timed.student("work_in_a_thread", [x])
                seen["thread"].append((call.seconds, call.wall_seconds))

    problem = support.problem(entrypoints=("work_then_sleep", "work_in_a_thread"))
    result = grader.grade(source=WORK_SOURCE, problem=problem, checks=[_spec(session)])
    assert result.verdict == Verdict.ACCEPTED, result.to_dict()
    for work, wall in seen["sleep"]:
        assert wall is not None and wall >= 0.15  # the sleep happened
        assert 0.03 <= work < 0.15  # the burn counted, whatever the load; the sleep did not
    for work, _ in seen["thread"]:
        assert work >= 0.03  # a thread's work is the call's too
    support.assert_healthy(grader)
