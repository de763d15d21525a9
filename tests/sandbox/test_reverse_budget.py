"""What a submission can make the trusted side spend: reverse calls, replies, the checker's CPU, attacked.

A reverse call runs a check's function on the trusted side, on arguments the student's code chose. The caps bound
one call (64 reverse calls, 16 MiB a frame), not a submission: a test that called its layer at the limit in every
call spent 26 s of the grader's CPU, outside every CPU group, and a timing check's replies of 60 MiB each were all
kept by the service until the check ended. Now one budget per submission counts the trusted side's CPU and bytes
(``graders.code.reverse_budget``), the set's checker runs inside its slot's CPU group, and timed replies are
decoded and dropped as they arrive. Each test failed before the change.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from graders.code.checks import CheckSpec, StudentError, TrustedFunction
from graders.code.reverse_budget import BUDGET_SPENT
from graders.code.runner import CodeGrader
from graders.grade import grade_submission
from graders.problemset.loader import load_problem_set
from graders.results import Verdict, Visibility
from graders.sandbox import procfs
from graders.sandbox.errors import RunEnded
from tests.sandbox import support

BUSY_S = 0.02  # CPU time each call of the trusted function burns
BUDGET_S = 0.3
BUDGET_MB = 48

SOURCE = """
import torch

def flood(f, n, size=1):
    seen = []
    for _ in range(n):
        try:
            f(torch.ones(size))
            seen.append("ok")
        except RuntimeError as exc:
            seen.append(str(exc))
    return seen

def big(x):
    return torch.full((6 << 20,), float(x))  # 24 MiB

def add(a, b):
    return a + b

def huge():
    return torch.zeros(24 << 20)  # 96 MiB, over the 64 MiB transfer cap

def forged_huge():
    import gc, json, os, struct
    server = next(o for o in gc.get_objects() if type(o).__name__ == "Server")  # the child's own: the student's
    msg = {"id": server.request_id, "ok": True, "value": {"t": "bytes", "b": 0}}
    header = json.dumps({"msg": msg, "bufs": [1 << 30]}).encode()
    os.write(4, struct.pack("<I", len(header)) + header + bytes(1 << 20))  # declares 1 GiB, sends 1 MiB
"""
ENTRYPOINTS = ("flood", "big", "add", "huge", "forged_huge")


def _busy(x: torch.Tensor) -> torch.Tensor:
    start = time.thread_time()
    while time.thread_time() - start < BUSY_S:
        pass
    return x


@pytest.fixture(scope="module")
def budgeted(data_dir: Path) -> Iterator[CodeGrader]:
    support.require_jail()
    config = support.jail_config(hidden_paths=[data_dir], reverse_cpu_s=BUDGET_S, reverse_mb=BUDGET_MB)
    with CodeGrader(config) as grader:
        yield grader


def _grade(grader: CodeGrader, *funcs):
    specs = [CheckSpec(f.__name__, f, 1.0, "answer", Visibility.HIDDEN, 30.0, "") for f in funcs]
    return grader.grade(source=SOURCE, problem=support.problem(entrypoints=ENTRYPOINTS), checks=specs)


def test_a_flood_of_reverse_calls_spends_the_submissions_budget_not_the_graders(budgeted: CodeGrader) -> None:
    calls: list[int] = []
    errors: list[StudentError] = []
    busy = TrustedFunction(lambda x: calls.append(1) or _busy(x))

    def floods(student):
        for _ in range(6):  # 6 × 64 calls of 20 ms: 7.7 s of the grader's CPU without a budget
            try:
                student.call("flood", busy, 64)
            except StudentError as err:
                errors.append(err)
        if errors:
            raise errors[0]

    def later_check(student):  # another check, another child, the same submission: the budget is spent
        assert student.call("flood", busy, 3) == ["ok"] * 3

    result = _grade(budgeted, floods, later_check)
    assert len(calls) <= BUDGET_S / BUSY_S + 2, len(calls)  # one call past the budget at most
    assert len(errors) == 6 and {e.message for e in errors} == {BUDGET_SPENT}, errors
    assert result.verdict not in (Verdict.INTERNAL_ERROR,) and not result.checks[1].passed, result.to_dict()
    assert "budget" in result.checks[0].feedback and "budget" in result.checks[1].feedback, result.to_dict()
    fresh: list[list[str]] = []
    _grade(budgeted, lambda student: fresh.append(student.call("flood", busy, 3)))  # the next submission's own
    assert fresh == [["ok"] * 3]


def test_reverse_calls_with_large_arguments_spend_the_byte_budget(budgeted: CodeGrader) -> None:
    calls: list[int] = []
    echo = TrustedFunction(lambda x: calls.append(1) or x)
    seen: list[list[str]] = []

    def floods(student):
        seen.append(student.call("flood", echo, 2, 3 << 20))  # 12 MiB out and 12 back per call
        try:
            student.call("flood", echo, 20, 3 << 20)
        except StudentError as err:
            seen.append([err.message])

    _grade(budgeted, floods)
    assert seen[0] == ["ok", "ok"] and seen[1] == [BUDGET_SPENT], seen
    assert len(calls) == 2, len(calls)  # two calls of 12 MiB each way spend the 48 MiB: the third is refused


# -- through a set's checker ------------------------------------------------------------------------------------

SET_YAML = """
id: budget
title: Reverse calls through the checker
problems:
  - id: c1
    title: Flood
    kind: code
    prompt: prompts/c1.md
    entrypoints: [flood, big, add]
    checks: checks/c1.py
    limits: {time_s: 20, memory_mb: 1024, source_kb: 20}
"""

CHECKS = f"""
import time
from graders.code.check_api import StudentError, TrustedFunction, check

CALLS = []

def busy(x):
    CALLS.append(1)
    start = time.thread_time()
    while time.thread_time() - start < {BUSY_S}:
        pass
    return x

@check(points=1, category="answer", visibility="visible")
def floods(student):
    refused = 0
    for _ in range(6):
        try:
            student.call("flood", TrustedFunction(busy), 64)
        except StudentError:
            refused += 1
    return f"calls={{len(CALLS)}} refused={{refused}}"

REFERENCE = "import torch\\ndef big(x):\\n    return torch.full((6 << 20,), float(x))\\n"

@check(points=1, category="answer", visibility="visible", timeout_s=60)
def timed(student):
    with student.timing_session(REFERENCE, "big") as session:
        for i in range(8):  # 24 MiB each: 192 MiB held by the service before
            session.student("big", [i])
"""


@pytest.fixture(scope="module")
def budget_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("budget-set")
    for folder in ("checks", "prompts", "solutions/c1"):
        (root / folder).mkdir(parents=True)
    (root / "problemset.yaml").write_text(SET_YAML)
    (root / "prompts" / "c1.md").write_text("# c1\n")
    (root / "checks" / "c1.py").write_text(CHECKS)
    (root / "solutions" / "c1" / "good.py").write_text(SOURCE)
    return root


def _grade_set(grader: CodeGrader, root: Path):
    return grade_submission(load_problem_set(root), "c1", {"code": SOURCE}, lambda: grader)


def test_the_checker_runs_in_its_slots_cpu_group_and_its_time_is_the_submissions(
    budgeted: CodeGrader, budget_set: Path
) -> None:
    result = _grade_set(budgeted, budget_set)
    feedback = {c.name: c.feedback for c in result.checks}
    calls, refused = (int(part.split("=")[1]) for part in feedback["floods"].split())
    assert calls <= BUDGET_S / BUSY_S + 2 and refused == 6, feedback  # the checker's CPU was charged
    slot = budgeted._pool.slots[0]
    group = getattr(slot.cgroups, "cpu", None) or getattr(slot.cgroups, "path", None)  # v1's cpu group, v2's
    if group is None:
        pytest.skip("no CPU group holds a slot here")
    checkers = [c for (root, _), c in budgeted._checkers._checkers.items() if root == budget_set.resolve()]
    assert checkers, "no checker graded the set"
    for pid in procfs.tree(checkers[0].proc.pid):  # bubblewrap, its init, the checker: all in the slot's group
        assert group.name in Path(f"/proc/{pid}/cgroup").read_text(), pid


def test_timed_replies_are_not_kept_by_the_service(budgeted: CodeGrader, budget_set: Path) -> None:
    _grade_set(budgeted, budget_set)  # warm: the checker and the reference child's first start
    tracemalloc.start()
    try:
        result = _grade_set(budgeted, budget_set)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    timed = next(c for c in result.checks if c.name == "timed")
    assert timed.passed, result.to_dict()
    assert peak < 4 * (24 << 20), f"the service held {peak >> 20} MiB for 8 replies of 24 MiB"


def test_the_grading_thread_is_in_its_slots_cpu_group_while_it_grades(budgeted: CodeGrader) -> None:
    """The service's thread decodes the slot's replies and answers its reverse calls: in cgroup v1 it shares the
    slot's CPU share while it grades, and is back in the service's own group after."""
    slot = budgeted._pool.slots[0]
    group = getattr(slot.cgroups, "cpu", None)
    if slot.cgroups is None or slot.cgroups.version != "v1" or group is None:
        pytest.skip("only cgroup v1 moves a single thread (v2 keeps a process's threads in one group)")
    seen: list[str] = []

    def check(student):
        seen.append(Path("/proc/thread-self/cgroup").read_text())
        assert student.call("add", 1, 2) == 3

    result = _grade(budgeted, check)
    assert result.checks[0].passed, result.to_dict()
    assert group.name in seen[0], seen
    assert group.name not in Path("/proc/thread-self/cgroup").read_text()


@pytest.mark.parametrize("entry", ["huge", "forged_huge"])
def test_one_huge_reply_is_refused_before_the_service_holds_it(budgeted: CodeGrader, entry: str) -> None:
    """A return value over the transfer cap is refused in the child; a forged frame that declares 1 GiB is refused
    by its declared length, before anything is allocated: a student verdict either way, and the service's memory
    does not grow by the reply."""
    outcome: list[BaseException] = []

    def check(student):
        try:
            student.call(entry)
        except BaseException as exc:  # RunEnded is not an Exception: a check cannot swallow it
            outcome.append(exc)
            raise

    tracemalloc.start()
    try:
        result = _grade(budgeted, check)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.verdict is not Verdict.INTERNAL_ERROR and not result.checks[0].passed, result.to_dict()
    assert outcome, result.to_dict()
    if entry == "forged_huge":  # refused by its declared length, not by an error in the forger's own code
        assert isinstance(outcome[0], RunEnded) and outcome[0].cause == "protocol", outcome
    assert peak < 32 << 20, f"the service held {peak >> 20} MiB"
    support.assert_healthy(budgeted)
