"""The gate on a small synthetic problem set, graded in-process."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from graders.problemset.mutant_gate import expected_categories, run_mutant_gate
from tests.checklibs.attention.direct_proxy import DirectGrader

CHECKS = """
from graders.code.checks import CheckFailed, check


@check(points=2, category="answer")
def doubles(student):
    if student.call("f", 2) != 4:
        raise CheckFailed("f(2) should be 4")


@check(points=1, category="validation")
def refuses_strings(student):
    from graders.code.checks import StudentError

    try:
        student.call("f", "x")
    except StudentError:
        return
    raise CheckFailed("f('x') should raise")
"""


def _problem() -> SimpleNamespace:
    return SimpleNamespace(
        id="p1", checks="checks/p1.py", solutions_dir=lambda: "solutions/p1", mutants_dir=lambda: "mutants/p1"
    )


def _set(root: Path, solutions: dict[str, str], mutants: dict[str, str]) -> Path:
    for folder, files in (("solutions/p1", solutions), ("mutants/p1", mutants)):
        (root / folder).mkdir(parents=True)
        for name, text in files.items():
            (root / folder / name).write_text(text)
    (root / "checks").mkdir()
    (root / "checks" / "p1.py").write_text(CHECKS)
    return root


GOOD = "def f(x):\n    if not isinstance(x, int):\n        raise TypeError(x)\n    return 2 * x\n"
NO_CHECK = "# caught-by: validation\ndef f(x):\n    return 2 * x\n"
WRONG = "# caught-by: validation\ndef f(x):\n    return x + 3\n"


def test_a_good_set_passes_and_renders_a_matrix(tmp_path):
    report = run_mutant_gate(_problem(), _set(tmp_path, {"good.py": GOOD}, {"no_check.py": NO_CHECK}), DirectGrader())
    assert report.ok, report.problems
    text = report.render_text()
    assert "S good.py" in text and "M no_check.py" in text and "✗ 0" in text and "✓ 2" in text
    data = report.to_dict()
    assert data["ok"] and data["files"][1]["lost_in_categories"] == ["validation"]
    assert data["files"][1]["checks"]["refuses_strings"] == {"passed": False, "score": 0.0, "max_score": 1.0}


def test_a_failing_solution_and_an_uncaught_mutant_are_reported(tmp_path):
    report = run_mutant_gate(_problem(), _set(tmp_path, {"bad.py": NO_CHECK}, {"same.py": GOOD}), DirectGrader())
    assert not report.ok
    assert any("solutions/p1/bad.py: reference solution scored 2/3" in p for p in report.problems)
    assert any("mutants/p1/same.py: mutant not caught" in p for p in report.problems)


def test_a_mutant_caught_by_the_wrong_category_is_reported(tmp_path):
    report = run_mutant_gate(_problem(), _set(tmp_path, {"good.py": GOOD}, {"wrong.py": WRONG}), DirectGrader())
    assert report.problems == [
        "mutants/p1/wrong.py: mutant declares caught-by validation but lost points only in answer"
    ]


def test_a_problem_without_solutions_is_refused(tmp_path):
    report = run_mutant_gate(_problem(), _set(tmp_path, {}, {"wrong.py": WRONG}), DirectGrader())
    assert any("no reference solution" in p for p in report.problems)


def test_caught_by_lines_are_parsed():
    assert expected_categories("# caught-by: masking, gradient\nx = 1\n#caught-by:timing\n") == [
        "masking",
        "gradient",
        "timing",
    ]


# A timing check whose verdict is scripted per grading: f.SCRIPT lists, per grading of a file, whether it is fast.
TIMING_CHECKS = """
from graders.code.checks import CheckFailed, check


@check(points=2, category="answer")
def doubles(student):
    if student.call("f", 2) != 4:
        raise CheckFailed("f(2) should be 4")


@check(points=1, category="timing")
def fast(student):
    if not student.call("fast_now"):
        raise CheckFailed("too slow", score_fraction=0.5)
"""


def _timing_set(root: Path, solutions: dict[str, str], mutants: dict[str, str]) -> Path:
    root = _set(root, solutions, mutants)
    (root / "checks" / "p1.py").write_text(TIMING_CHECKS)
    return root


def _scripted(verdicts: list[bool], caught_by: str = "") -> str:
    """A file whose timing verdict is ``verdicts[i]`` in its i-th grading (DirectGrader loads it anew each time)."""
    return (
        f"{caught_by}import builtins\n"
        f"_key = 'gate_test_' + str({verdicts!r}) + {caught_by!r}\n"
        "_n = getattr(builtins, _key, 0)\n"
        "setattr(builtins, _key, _n + 1)\n"
        "def f(x):\n    return 2 * x\n"
        f"def fast_now():\n    return {verdicts!r}[min(_n, {len(verdicts) - 1})]\n"
    )


@pytest.fixture(autouse=True)
def _forget_gradings():
    import builtins

    yield
    for name in [n for n in vars(builtins) if n.startswith("gate_test_")]:
        delattr(builtins, name)


def test_a_solution_that_lost_only_timing_points_is_re_graded_before_it_is_refused(tmp_path):
    unstable = _scripted([False, True])
    report = run_mutant_gate(_problem(), _timing_set(tmp_path, {"good.py": unstable}, {}), DirectGrader())
    assert report.ok, report.problems
    assert report.rows[0].full_marks
    assert report.rows[0].notes == [
        "lost timing points in a first grading (2.5/3), re-graded: 3/3 (timing verdict unstable)"
    ]
    assert "note: good.py: lost timing points" in report.render_text()


def test_a_solution_that_loses_timing_points_twice_is_refused(tmp_path):
    slow = _scripted([False, False])
    report = run_mutant_gate(_problem(), _timing_set(tmp_path / "a", {"slow.py": slow}, {}), DirectGrader())
    assert report.problems == ["solutions/p1/slow.py: reference solution scored 2.5/3 (failed: fast)"]
    wrong = "def f(x):\n    return x\ndef fast_now():\n    return False\n"  # lost other points too: not re-graded
    report = run_mutant_gate(_problem(), _timing_set(tmp_path / "b", {"wrong.py": wrong}, {}), DirectGrader())
    assert report.rows[0].notes == [] and not report.ok


def test_a_timing_mutant_that_lost_timing_points_is_caught_in_one_grading(tmp_path):
    good = _scripted([True])
    slow = _scripted([False], "# caught-by: timing\n")
    report = run_mutant_gate(_problem(), _timing_set(tmp_path, {"good.py": good}, {"m.py": slow}), DirectGrader())
    assert report.ok and report.warnings == [], report.problems
    assert report.rows[1].timing_lost == (True,)  # not graded again


def test_a_timing_mutant_that_kept_its_timing_points_is_re_measured(tmp_path):
    good = _scripted([True])
    late = _scripted([True, False], "# caught-by: timing\n")
    report = run_mutant_gate(_problem(), _timing_set(tmp_path, {"good.py": good}, {"m.py": late}), DirectGrader())
    assert report.ok and report.warnings == [], report.problems
    assert report.rows[1].timing_lost == (False, True)
    assert report.rows[1].notes == [
        "kept its timing points in a first grading (3/3), lost them when re-measured (2.5/3)"
    ]


NOT_REPRODUCED = (
    "mutants/p1/m.py: timing loss not reproduced under this load: the mutant declares caught-by timing but kept its "
    "timing points in 2 of 2 gradings (lost points in {lost}); the set is not refused for it. Re-run `autograder "
    "problems validate` on a quiet machine to check the timing check's margin."
)


def test_a_timing_loss_not_reproduced_under_load_warns_and_does_not_refuse_the_set(tmp_path):
    # The timing mutant is not actually slower (as under load, where its loss could not be measured): before, the
    # gate refused the whole set for it ("mutant not caught"), though its solutions score full marks.
    good = _scripted([True])
    not_slower = _scripted([True, True], "# caught-by: timing\n")
    report = run_mutant_gate(
        _problem(), _timing_set(tmp_path / "a", {"good.py": good}, {"m.py": not_slower}), DirectGrader()
    )
    assert report.ok, report.problems
    assert report.rows[1].timing_lost == (False, False)
    assert report.warnings == [NOT_REPRODUCED.format(lost="no check")]
    assert f"warning: {NOT_REPRODUCED.format(lost='no check')}" in report.render_text()
    assert report.to_dict()["warnings"] == report.warnings
    # As the issue saw it: the timing mutant lost points in another check but not in timing ("declares caught-by
    # timing but lost points only in method" refused the attention set).
    elsewhere = "# caught-by: timing\ndef f(x):\n    return x\ndef fast_now():\n    return True\n"
    report = run_mutant_gate(
        _problem(), _timing_set(tmp_path / "b", {"good.py": good}, {"m.py": elsewhere}), DirectGrader()
    )
    assert report.ok, report.problems
    assert report.warnings == [NOT_REPRODUCED.format(lost="answer")]


def test_a_mutant_not_reproduced_in_timing_must_still_be_caught_by_its_other_categories(tmp_path):
    good = _scripted([True])
    uncaught = _scripted([True, True], "# caught-by: timing, answer\n")
    report = run_mutant_gate(
        _problem(), _timing_set(tmp_path / "a", {"good.py": good}, {"m.py": uncaught}), DirectGrader()
    )
    assert report.problems == ["mutants/p1/m.py: mutant not caught: it scored full marks (3/3)"]
    wrong = "# caught-by: timing, answer\ndef f(x):\n    return x\ndef fast_now():\n    return True\n"
    report = run_mutant_gate(
        _problem(), _timing_set(tmp_path / "b", {"good.py": good}, {"m.py": wrong}), DirectGrader()
    )
    assert report.ok and len(report.warnings) == 1, report.problems


def test_a_solution_is_still_refused_when_a_timing_mutant_is_not_reproduced(tmp_path):
    slow = _scripted([False, False])
    not_slower = _scripted([True, True], "# caught-by: timing\n")
    report = run_mutant_gate(_problem(), _timing_set(tmp_path, {"slow.py": slow}, {"m.py": not_slower}), DirectGrader())
    assert report.problems == ["solutions/p1/slow.py: reference solution scored 2.5/3 (failed: fast)"]
