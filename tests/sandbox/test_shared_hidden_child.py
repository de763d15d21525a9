"""Hidden checks share one fresh child (sealed checks another), and still score as if each had a child of its own.

Each hidden check loads the source anew in the shared child with the random generators put back as a fresh child
has them; a child that ends reruns its check in a fresh child (unless it was already fresh), so a crash is the
check's that caused it, never a later one's; and no visible check runs in or after a child that saw a hidden input.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graders.code.checks import CheckFailed, CheckSpec
from graders.code.runner import CodeGrader
from graders.code.sanitise import DID_NOT_FINISH
from graders.results import Visibility
from tests.sandbox import support

VISIBLE, HIDDEN, SEALED = Visibility.VISIBLE, Visibility.HIDDEN, Visibility.AFTER_DUE


def _adds(a: int, b: int, name: str) -> Callable[[Any], None]:
    def check(student: Any) -> None:
        got = student.call("add", a, b)
        if got != a + b:
            raise CheckFailed(f"add({a}, {b}) returned {got!r}")

    check.__name__ = name
    return check


def _spec(func: Callable[[Any], Any], visibility: Visibility) -> CheckSpec:
    return CheckSpec(func.__name__, func, 1.0, "answer", visibility, 10.0, "")


def _grade(grader: CodeGrader, source: str, checks: list[CheckSpec]):  # type: ignore[no-untyped-def]
    return grader.grade(source=source, problem=support.problem(), checks=checks)


def _submission(add_body: str, prelude: str = "") -> str:
    body = "\n".join("    " + line for line in add_body.strip("\n").splitlines())
    tail = "\n\n\ndef scaled_attention(q, k, v):\n    return q\n"
    return f"import builtins, os, torch\n{prelude}\n\ndef add(a, b):\n{body}{tail}"


CHECKS = [
    (_adds(2, 3, "visible_before"), VISIBLE),
    (_adds(1, 2, "hidden_first"), HIDDEN),
    (_adds(7, 7, "hidden_secret"), HIDDEN),  # the one hidden input the submission crashes on
    (_adds(2, 2, "hidden_after"), HIDDEN),
    (_adds(5, 5, "sealed"), SEALED),
    (_adds(3, 4, "visible_after"), VISIBLE),
]


def test_a_crash_on_one_hidden_input_costs_that_check_alone(grader: CodeGrader) -> None:
    source = _submission("if a == 7:\n    os._exit(3)\nreturn a + b")
    result = _grade(grader, source, [_spec(f, v) for f, v in CHECKS])
    by_name = {c.name: c for c in result.checks}
    assert [c.name for c in result.checks] == [f.__name__ for f, _ in CHECKS]  # the checks' order is kept
    assert by_name["hidden_secret"].score == 0.0 and by_name["hidden_secret"].feedback == DID_NOT_FINISH
    lost = {c.name for c in result.checks if not c.passed}
    assert lost == {"hidden_secret"}, result.to_dict()  # the checks after it ran, in a fresh child, and passed
    assert "exit status 3" not in str(result.to_dict())
    support.assert_healthy(grader)


def test_a_crash_that_earlier_checks_caused_is_rerun_in_a_fresh_child(grader: CodeGrader) -> None:
    """A submission that dies on its second call in a process (a count kept in builtins survives a reload) loses
    nothing: with a child per hidden check it never made a second call, and a rerun in a fresh child says so."""
    source = _submission(
        "builtins._calls = getattr(builtins, '_calls', 0) + 1\nif builtins._calls == 2:\n    os._exit(3)\nreturn a + b"
    )
    checks = [_spec(_adds(i, i, f"hidden_{i}"), HIDDEN) for i in range(1, 5)]
    result = _grade(grader, source, checks)
    assert result.score == result.max_score == 4.0, result.to_dict()
    support.assert_healthy(grader)


def test_a_memory_leak_kept_across_checks_costs_no_check(grader: CodeGrader) -> None:
    """Memory kept by earlier checks (past the problem's limit in all) reruns the check that hits the limit."""
    keep = "builtins.__dict__.setdefault('_kept', []).append(torch.ones(100 * 2**20, dtype=torch.uint8))"
    source = _submission(f"{keep}\nreturn a + b")
    checks = [_spec(_adds(i, i, f"hidden_{i}"), HIDDEN) for i in range(1, 7)]
    result = _grade(grader, source, checks)  # 6 x 100 MiB held in one child is past the problem's 512 MiB
    assert result.score == result.max_score, result.to_dict()
    support.assert_healthy(grader)


def test_each_hidden_check_sees_a_fresh_childs_module_and_random_draws(grader: CodeGrader) -> None:
    source = _submission(
        "_calls[0] += 1\nreturn [torch.rand(()).item(), _calls[0], getattr(builtins, '_n', 0)]",
        prelude="_calls = [0]\nbuiltins._n = getattr(builtins, '_n', 0) + 1",
    )
    seen: list[Any] = []

    def records(student: Any) -> None:
        seen.append(student.call("add", 1, 1))

    def twice(student: Any) -> None:
        seen.append(("visible", student.call("add", 1, 1), student.call("add", 1, 1)))

    hidden = [_spec(records, HIDDEN) for _ in range(3)]
    hidden = [CheckSpec(f"records_{i}", s.func, 1.0, "answer", HIDDEN, 10.0, "") for i, s in enumerate(hidden)]
    result = _grade(grader, source, [*hidden, _spec(twice, VISIBLE)])
    assert result.score == result.max_score, result.to_dict()
    visible, draws = seen[0], seen[1:]
    assert visible[0] == "visible" and visible[1][0] != visible[2][0]  # the generator does move within a child
    assert len({d[0] for d in draws}) == 1, draws  # every hidden check draws what a fresh child draws
    assert [d[1] for d in draws] == [1, 1, 1], draws  # a new module each time: its counter starts anew
    assert [d[2] for d in draws] == [1, 2, 3], draws  # and they did share one child (builtins outlive a load)
    assert visible[1][2] == 1  # the visible checks ran first, in a child no hidden check ever used
