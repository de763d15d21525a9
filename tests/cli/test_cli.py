"""The autograder CLI: offline grading, set validation and display, account commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.main import app
from app.config import get_settings
from tests.conftest import FIXTURE_SETS, REPO
from tests.sandbox import support


@pytest.fixture
def run(tmp_path: Path):  # type: ignore[no-untyped-def]
    runner = CliRunner()
    env = {"AUTOGRADER_DATA_DIR": str(tmp_path / "data"), "AUTOGRADER_PROBLEMS_DIR": str(REPO / "problems")}

    def invoke(*args: str):  # type: ignore[no-untyped-def]
        get_settings.cache_clear()
        try:
            return runner.invoke(app, list(args), env=env)
        finally:
            get_settings.cache_clear()

    return invoke


def test_grade_answers_offline_json(run) -> None:  # type: ignore[no-untyped-def]
    answers = {"b1": "√d_k", "b2": "V", "b3": "查找的信息", "b4": "匹配", "b5": "内容"}
    result = run("grade", "--set", "ch9", "--problem", "q1", "--answers", json.dumps(answers), "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["score"] == doc["max_score"] == 5.0
    assert doc["verdict"] == "accepted"
    assert [c["name"] for c in doc["checks"]] == ["b1", "b2", "b3", "b4", "b5"]
    assert set(doc["checks"][0]) == {"name", "category", "passed", "score", "max_score", "feedback"}


def test_grade_wrong_answer_exits_1_with_feedback(run) -> None:  # type: ignore[no-untyped-def]
    result = run("grade", "--set", "ch9", "--problem", "q2", "--answers", '{"b1": "A"}', "--json")
    assert result.exit_code == 1
    doc = json.loads(result.output)
    assert doc["score"] == 0 and doc["checks"][0]["feedback"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--set", "nope", "--problem", "q1", "--answers", "{}"], "no problem set 'nope'"),
        (["--set", "ch9", "--problem", "q9", "--answers", "{}"], "no problem 'q9'"),
        (["--set", "ch9", "--problem", "q1", "--answers", "{not json"], "not valid JSON"),
        (["--set", "ch9", "--problem", "q1", "--answers", '{"b9": "x"}'], "unknown part 'b9'"),
    ],
)
def test_grade_bad_input_exits_2(run, args, message) -> None:  # type: ignore[no-untyped-def]
    result = run("grade", *args)
    assert result.exit_code == 2
    assert message in result.output


def test_validate_ok_and_broken(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ok = run("problems", "validate", str(FIXTURE_SETS / "basic"))
    assert ok.exit_code == 0, ok.output
    assert "OK" in ok.output
    broken = tmp_path / "broken"
    shutil.copytree(FIXTURE_SETS / "basic", broken)
    text = (broken / "problemset.yaml").read_text().replace("answer: 32", "answer: thirty-two")
    (broken / "problemset.yaml").write_text(text.replace("title: Choice", "titel: Choice"))
    bad = run("problems", "validate", str(broken))
    assert bad.exit_code == 1
    assert "problems[0] (t1).parts[1].answer" in bad.output
    assert "problems[1] (t2).titel: unknown field" in bad.output


def test_show_student_view_json(run) -> None:  # type: ignore[no-untyped-def]
    result = run("problems", "show", "ch9", "q3", "--json")
    assert result.exit_code == 0, result.output
    view = json.loads(result.output)
    assert view["id"] == "q3" and view["prompt"]
    assert [p["id"] for p in view["parts"]] == ["b1", "b2", "b3", "b4", "b5"]
    assert all(set(p) <= {"id", "kind", "points", "hint", "widget", "options", "multi"} for p in view["parts"])


def test_show_counts_a_code_problems_points_in_the_checker(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The points are what the checks declare (codeset c1: 1 + 2), imported in the jailed checker: the checks'
    own module-level code, which writes a marker file where it can, never runs in the CLI's process."""
    support.require_jail()
    root = tmp_path / "codeset"
    shutil.copytree(FIXTURE_SETS / "codeset", root)
    marker = tmp_path / "imported-here"
    checks = root / "checks" / "c1.py"
    plant = f"try:\n    open({str(marker)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
    checks.write_text(plant + checks.read_text())
    result = run("problems", "show", str(root), "c1", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["points"] == 3.0
    assert not marker.exists()


def test_show_without_the_checker_counts_no_code_points(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A set whose checks do not import: the problem is shown without points, and the reason is given."""
    root = tmp_path / "codeset"
    shutil.copytree(FIXTURE_SETS / "codeset", root)
    (root / "checks" / "c1.py").write_text("raise SystemExit(3)\n")
    result = run("problems", "show", str(root), "c1", "--json")
    assert result.exit_code == 0, result.output
    assert "c1: points not counted" in result.output
    assert json.loads(result.output[result.output.index("{") :])["points"] is None


def test_users_and_tokens(run) -> None:  # type: ignore[no-untyped-def]
    created = run("users", "create", "--email", "ta@example.com", "--role", "instructor")
    assert created.exit_code == 0 and "password: " in created.output
    again = run("users", "create", "--email", "ta@example.com")
    assert again.exit_code == 1 and "already exists" in again.output
    token = run("tokens", "create", "--email", "ta@example.com", "--scope", "submit", "--scope", "instructor")
    assert token.exit_code == 0 and "agt_" in token.output
    missing = run("tokens", "create", "--email", "nobody@example.com")
    assert missing.exit_code == 1


def test_load_and_list(run) -> None:  # type: ignore[no-untyped-def]
    loaded = run("problems", "load", str(FIXTURE_SETS / "basic"))
    assert loaded.exit_code == 0 and "basic v1 (new version)" in loaded.output
    again = run("problems", "load", str(FIXTURE_SETS / "basic"))
    assert "basic v1 (unchanged)" in again.output
    listed = run("problems", "list")
    assert "basic\tv1" in listed.output


def test_show_and_grade_take_a_variants_seed(run) -> None:  # type: ignore[no-untyped-def]
    """``--seed`` (a student's, from the gradebook CSV's variant column) shows Q4 with that seed's numbers and
    grades against its key; without it the prompt keeps its markers and grading uses the YAML's numbers."""
    import re

    shown = run("problems", "show", "attention", "q4", "--seed", "12345", "--json")
    assert shown.exit_code == 0, shown.output
    prompt = json.loads(shown.output)["prompt"]
    d, h, b, t = (
        int(g)
        for g in re.search(r"\$d=(\d+)\$，头数 \$H=(\d+)\$，批量 \$B=(\d+)\$，序列长度 \$T=(\d+)\$", prompt).groups()
    )  # type: ignore[union-attr]
    assert (b, h, t, d) != (8, 8, 128, 256)  # not the set's own numbers
    assert "{%d%}" in json.loads(run("problems", "show", "attention", "q4", "--json").output)["prompt"]
    answers = json.dumps({"b5": str(b * h * t * t), "b2": f"{b}×{h}×{t}×{d // h}"})
    graded = run("grade", "--set", "attention", "--problem", "q4", "--answers", answers, "--seed", "12345", "--json")
    doc = json.loads(graded.output)
    assert {c["name"]: c["passed"] for c in doc["checks"]}.items() >= {"b5": True, "b2": True}.items()
    own = run("grade", "--set", "attention", "--problem", "q4", "--answers", answers, "--json")
    assert {c["name"]: c["passed"] for c in json.loads(own.output)["checks"]}["b5"] is False
    refused = run("grade", "--set", "ch9", "--problem", "q1", "--answers", "{}", "--seed", "1")
    assert refused.exit_code == 2 and "no parameters" in refused.output
