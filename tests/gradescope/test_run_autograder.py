"""The Gradescope `run_autograder` script, run in a temp folder laid out like Gradescope's /autograder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from app.submissions.gradescope import GradescopeResults
from tests.conftest import REPO
from tests.sandbox import support

SCRIPT = REPO / "gradescope" / "run_autograder"
CORRECT = REPO / "problems/attention/solutions/q5/masked_fill.py"
WRONG = REPO / "problems/attention/mutants/q5/missing_sqrt_dk.py"
VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}


def run_autograder(tmp_path: Path, files: dict[str, Path], **env: str) -> dict[str, Any]:
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    for name, source in files.items():
        (root / "submission" / name).write_bytes(source.read_bytes())
    environ = {
        **os.environ,
        "AUTOGRADER_GS_ROOT": str(root),
        "AUTOGRADER_GS_SET": "attention",
        "AUTOGRADER_GS_PROBLEM": "q5",
        "AUTOGRADER_BIN": str(Path(sys.executable).parent / "autograder"),
        "AUTOGRADER_PROBLEMS_DIR": str(REPO / "problems"),
        **env,
    }
    done = subprocess.run([str(SCRIPT)], env=environ, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads((root / "results" / "results.json").read_text())
    validate(doc)
    return doc


def validate(doc: dict[str, Any]) -> None:
    """Gradescope's results.json spec, checked by hand as well as by our model (a model bug must not hide here)."""
    GradescopeResults.model_validate(doc)
    assert isinstance(doc["score"], float | int)
    assert isinstance(doc["execution_time"], float | int) and doc["execution_time"] >= 0
    assert isinstance(doc["output"], str)
    assert doc["visibility"] in VISIBILITIES and doc["stdout_visibility"] in VISIBILITIES
    for test in doc["tests"]:
        assert isinstance(test["name"], str) and test["name"]
        assert test["status"] in ("passed", "failed")
        assert 0 <= test["score"] <= test["max_score"]
        assert test["visibility"] in VISIBILITIES
    assert doc["score"] == pytest.approx(sum(t["score"] for t in doc["tests"]))


def test_correct_q5_gets_full_marks(tmp_path: Path) -> None:
    support.require_jail()
    doc = run_autograder(tmp_path, {"q5.py": CORRECT}, AUTOGRADER_GS_FILE="q5.py")
    assert doc["tests"], doc
    assert all(t["status"] == "passed" for t in doc["tests"])
    assert doc["score"] == sum(t["max_score"] for t in doc["tests"]) > 0
    assert doc["output"].startswith("accepted")


def test_wrong_q5_fails_the_scaling_check(tmp_path: Path) -> None:
    support.require_jail()
    # Without AUTOGRADER_GS_FILE the only .py file of the submission is graded.
    doc = run_autograder(tmp_path, {"attention.py": WRONG})
    failed = [t for t in doc["tests"] if t["status"] == "failed"]
    assert failed and doc["score"] < sum(t["max_score"] for t in doc["tests"])
    assert "reference_example" in {t["name"] for t in failed}
    assert all(t["output"] for t in failed)


def test_missing_file_is_reported_to_the_student(tmp_path: Path) -> None:
    doc = run_autograder(tmp_path, {"notes.txt": CORRECT}, AUTOGRADER_GS_FILE="q5.py")
    assert doc["score"] == 0 and doc["tests"] == []
    assert "upload a file named q5.py" in doc["output"]


def test_unreadable_source_writes_results_with_the_reason(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"def scaled_attention(:\n    \xff\xfe\n")
    doc = run_autograder(tmp_path, {"q5.py": bad}, AUTOGRADER_GS_FILE="q5.py")
    assert doc["score"] == 0 and doc["tests"] == []
    assert doc["output"].startswith("not graded:")


def test_laid_out_as_setup_sh_installs_it(tmp_path: Path) -> None:
    """What setup.sh leaves in Gradescope's image: the source at /autograder/source, run_autograder and config.env
    (from the example) copied to /autograder, no AUTOGRADER_GS_* in the environment; Gradescope runs the copy."""
    support.require_jail()
    root = tmp_path / "autograder"
    (root / "submission").mkdir(parents=True)
    (root / "source").symlink_to(REPO, target_is_directory=True)
    shutil.copy(SCRIPT, root / "run_autograder")
    shutil.copy(REPO / "gradescope" / "config.env.example", root / "config.env")
    (root / "submission" / "q5.py").write_bytes(WRONG.read_bytes())
    environ = {k: v for k, v in os.environ.items() if not k.startswith("AUTOGRADER_")}
    # setup.sh links the installed command into /usr/local/bin; here the venv's bin comes first on PATH instead.
    environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{environ.get('PATH', '')}"
    environ["AUTOGRADER_GS_ROOT"] = str(root)  # the one difference: Gradescope's /autograder is a temp folder
    done = subprocess.run([str(root / "run_autograder")], env=environ, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    doc = json.loads((root / "results" / "results.json").read_text())
    validate(doc)
    # config.env named attention/q5/q5.py: the wrong q5 was graded from the source's problems/ and failed.
    failed = {t["name"] for t in doc["tests"] if t["status"] == "failed"}
    assert "reference_example" in failed and doc["score"] < sum(t["max_score"] for t in doc["tests"])
