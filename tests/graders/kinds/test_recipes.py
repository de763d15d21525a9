"""docs/extending.md's two recipes, followed in a copy of graders/ with the page's own code blocks.

The new kinds are then used in a fresh interpreter that loads a set naming them before anything imports
graders.kinds: registration never depends on import order.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "extending.md"

SET = """\
id: toy
title: Toy
problems:
  - id: q1
    title: Order the steps
    kind: ordering
    prompt: prompts/p.md
    items: [softmax, scores, weighted sum]
    order: [scores, softmax, weighted sum]
    points: 2
    accept: ["scores, softmax, weighted sum", "Scores,Softmax , weighted sum"]
    reject: ["softmax, scores, weighted sum"]
  - id: q2
    title: A blank
    kind: fill_in
    prompt: prompts/p.md
    parts:
      - {kind: sequence, answer: [q, k, v], accept: ["Q, K, V"], reject: ["k, q, v"]}
"""

SCRIPT = """
import json, sys
from pathlib import Path
import graders
from graders.problemset.loader import load_problem_set

loaded = load_problem_set(Path(sys.argv[1]))
out = {"graders": graders.__file__, "kinds_imported_by_loading": "graders.kinds" in sys.modules}
from graders.grade import answer_key, check_payload, grade_submission, problem_view, validate_set

def no_sandbox():
    raise AssertionError("answer problems never start the sandbox")

report = validate_set(loaded, code_grader=None)
q1, q2 = loaded.spec.problems
payload = check_payload(q1, answers={"b1": "scores, softmax, weighted sum"}, code=None)
out |= {
    "ok": report.ok, "report": report.render_text(), "points": report.points, "cases": report.answer_cases,
    "right": grade_submission(loaded, "q1", payload, no_sandbox).score,
    "wrong": grade_submission(loaded, "q2", {"answers": {"b1": "v, k, q"}}, no_sandbox).score,
    "view": problem_view(q1, loaded, 2.0),
    "keys": [answer_key(q1), answer_key(q2)],
}
print(json.dumps(out))
"""


def _blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def _insert(path: Path, anchor: str, text: str) -> None:
    source = path.read_text(encoding="utf-8")
    assert source.count(anchor) == 1, f"{path.name}: the recipe's place ({anchor!r}) is not there once"
    path.write_text(source.replace(anchor, text + anchor), encoding="utf-8")


def _follow_the_recipes(root: Path) -> None:
    answer_module, registry_import, registry_list, model_import, model, kind_module = _blocks()
    registry_entry = next(line + "\n" for line in registry_list.splitlines() if "AnswerKind(" in line)
    answers, kinds = root / "graders" / "answers", root / "graders" / "kinds"
    # Answer kind: 1. its module, 2. the import and one AnswerKind in the registry's list.
    (answers / "sequence.py").write_text(answer_module, encoding="utf-8")
    _insert(answers / "registry.py", "from graders.results import PartResult\n", registry_import)
    _insert(answers / "registry.py", "):\n    register_answer_kind(_kind)", registry_entry)
    # Problem kind: 1. the model beside the built-in ones and in the list of models, 2. its module.
    _insert(root / "graders" / "model.py", "\nID_PATTERN", model_import)
    _insert(root / "graders" / "model.py", "# Problem kind -> its model.", model + "\n\n")
    _insert(root / "graders" / "model.py", "):\n    register_problem_model(_model)", ", OrderingProblem")
    (kinds / "ordering.py").write_text(kind_module, encoding="utf-8")


def test_both_recipes_work_as_written(tmp_path: Path) -> None:
    assert len(_blocks()) == 6, "docs/extending.md: the recipes' six code blocks, in order"
    shutil.copytree(REPO / "graders", tmp_path / "graders", ignore=shutil.ignore_patterns("__pycache__"))
    _follow_the_recipes(tmp_path)
    toy = tmp_path / "toy"
    (toy / "prompts").mkdir(parents=True)
    (toy / "prompts" / "p.md").write_text("In order: (b1)\n", encoding="utf-8")
    (toy / "problemset.yaml").write_text(SET, encoding="utf-8")

    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(toy)],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["graders"].startswith(str(tmp_path))
    assert out["kinds_imported_by_loading"] is False  # the set loaded on the models alone
    assert out["ok"], out["report"]
    assert (out["points"], out["cases"]) == ({"q1": 2.0, "q2": 1.0}, 5)
    assert (out["right"], out["wrong"]) == (2.0, 0.0)
    assert out["view"]["takes"] == "answers" and out["view"]["items"] == ["softmax", "scores", "weighted sum"]
    assert out["view"]["parts"][0]["hint"] == "items in order, e.g. first, second, third"
    assert out["keys"] == [{"b1": "scores, softmax, weighted sum"}, {"b1": "q, k, v"}]
