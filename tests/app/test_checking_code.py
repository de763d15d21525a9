"""The checking code's version: what changes it, and what leaves a set's gate report current."""

from __future__ import annotations

from pathlib import Path

from app.problemsets import checking_code
from app.problemsets.checking_code import ANSWER_PARTS, CODE_PARTS, checking_code_version, tree_version


def _tree(root: Path) -> None:
    """A graders/ tree in ``root`` and a checklibs/ tree beside it (in ``root / "checklibs"`` here)."""
    names = ("grade.py", "answers/numeric.py", "code/runner.py", "sandbox/jail.py", "kinds/base.py")
    for name in (*names, "checklibs/attention/timing.py"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(f"# {name}\n", encoding="utf-8")


def test_an_edit_changes_the_version_of_the_sets_that_depend_on_it_only(tmp_path: Path) -> None:
    _tree(tmp_path)
    libraries = tmp_path / "checklibs"

    def versions() -> tuple[str, str]:
        return tree_version(tmp_path, ANSWER_PARTS), tree_version(tmp_path, CODE_PARTS, libraries=libraries)

    answers, code = versions()
    assert answers != code
    # The code grader: a fill-in set's report stays current.
    (tmp_path / "code" / "runner.py").write_text("# run otherwise\n", encoding="utf-8")
    assert versions()[0] == answers
    assert versions()[1] != code
    code = versions()[1]
    # A check library of the code sets (beside graders/, not in it): the same.
    (libraries / "attention" / "timing.py").write_text("# timed otherwise\n", encoding="utf-8")
    assert versions()[0] == answers
    assert versions()[1] != code
    code = versions()[1]
    # An answer kind: both kinds of sets.
    (tmp_path / "answers" / "numeric.py").write_text("# compared otherwise\n", encoding="utf-8")
    assert versions()[0] != answers
    assert versions()[1] != code


def test_an_added_or_moved_file_counts_and_bytecode_does_not(tmp_path: Path) -> None:
    _tree(tmp_path)
    before = tree_version(tmp_path, CODE_PARTS)
    (tmp_path / "sandbox" / "__pycache__").mkdir()
    (tmp_path / "sandbox" / "__pycache__" / "jail.cpython-311.pyc").write_bytes(b"\0compiled")
    (tmp_path / "notes.txt").write_text("not code\n", encoding="utf-8")
    assert tree_version(tmp_path, CODE_PARTS) == before
    (tmp_path / "sandbox" / "jail.py").rename(tmp_path / "sandbox" / "bwrap.py")
    assert tree_version(tmp_path, CODE_PARTS) != before


def test_the_code_version_covers_the_shipped_check_libraries() -> None:
    graders_only = tree_version(checking_code._GRADERS, CODE_PARTS)
    assert checking_code._CHECKLIBS.joinpath("attention", "timing.py").is_file()
    assert checking_code_version(code=True) != graders_only


def test_the_version_is_computed_once_per_process() -> None:
    assert checking_code_version(code=True) is checking_code_version(code=True)
    assert checking_code_version(code=True) != checking_code_version(code=False)
