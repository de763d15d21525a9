"""The import-linter contracts in pyproject.toml hold, and they would catch an upward import or a cycle.

`make test` runs lint-imports on the real tree; these tests run it on a copy with one bad import added, so a
contract that was loosened until it checks nothing fails here.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO

LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _copy_tree(tmp_path: Path) -> Path:
    for package in ("app", "graders", "checklibs"):
        shutil.copytree(REPO / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__", "static"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-logo", "--no-cache", "--config", str(root / "pyproject.toml")],
        cwd=root,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        timeout=120,
    )


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")


def test_contracts_hold_on_the_tree(tmp_path: Path) -> None:
    result = _lint(_copy_tree(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize(
    ("module", "bad_import", "contract"),
    [
        ("graders/results.py", "import app.config  # noqa", "graders/ never imports app/"),
        ("graders/answers/specs.py", "import graders.model  # noqa", "graders/ is layered"),
        ("graders/model.py", "import graders.code.runner  # noqa", "graders/ is layered"),
        ("graders/code/runner.py", "import graders.problemset.validate  # noqa", "graders/ is layered"),
        ("graders/sandbox/wire.py", "import graders.results  # noqa", "graders.sandbox (bound into the jail)"),
        ("graders/grade.py", "import graders.code.runner  # noqa", "set loading and answer grading never import"),
        ("graders/code/slot_grading.py", "import checklibs.attention.basic  # noqa", "graders/ and app/ never import"),
        ("app/worker/grading.py", "import checklibs.attention  # noqa", "graders/ and app/ never import"),
        ("checklibs/attention/tally.py", "import graders.code.checks  # noqa", "check libraries use the engine only"),
        ("checklibs/attention/inputs.py", "from graders.sandbox import codec  # noqa", "check libraries use"),
        ("graders/sandbox/prefork.py", "import graders.sandbox.slot  # noqa", "graders.sandbox.prefork never imports"),
        ("app/submissions/service.py", "import app.web.page_context  # noqa", "app's domain services"),
        # app/: each edge that once closed the cycle of its domain packages, and one sibling and one base import.
        ("app/users/service.py", "import app.courses.service  # noqa", "app/ is layered"),
        ("app/courses/service.py", "import app.submissions.models  # noqa", "app/ is layered"),
        ("app/courses/service.py", "import app.gradebook.service  # noqa", "app/ is layered"),
        ("app/problemsets/service.py", "import app.courses.service  # noqa", "app/ is layered"),
        ("app/lti/passback.py", "import app.gradebook.service  # noqa", "app/ is layered"),
        ("app/error_format.py", "import app.deps  # noqa", "app/ is layered"),
        ("app/webhooks/service.py", "import app.lti.passback  # noqa", "app/ is layered"),
        ("app/config.py", "import app.db  # noqa", "app/ is layered"),
    ],
)
def test_contracts_catch_an_upward_import(tmp_path: Path, module: str, bad_import: str, contract: str) -> None:
    root = _copy_tree(tmp_path)
    _append(root / module, bad_import)
    result = _lint(root)
    assert result.returncode != 0
    # A contract with ignored imports ends its line with their count: "... BROKEN (19 ignored imports)".
    broken = [line for line in result.stdout.splitlines() if line.endswith("BROKEN") or " BROKEN (" in line]
    assert any(line.startswith(contract) for line in broken), result.stdout


def test_every_part_of_app_has_its_floor() -> None:
    """A package or module of app/ left out of the layers would be free to import anything, and a cycle through it
    would go unseen: each one is named on a floor of app-layers."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "app-layers"]
    named = {name.strip() for floor in contract["layers"] for name in floor.split("|")}
    parts = {
        f"app.{path.stem}"
        for path in (REPO / "app").iterdir()
        if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()
    }
    assert parts - named == set(), "not on any floor of app-layers"
    assert named - parts == set(), "named in app-layers but not in app/"
