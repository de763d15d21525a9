""" "Behaves like a known bug": a student whose submission fails exactly the checks of one of the gate's mutants is
told so in the instructor's words (per problem, off by default), through the API and on the page in English and
Chinese; a correct submission, one that matches no mutant, one whose results are sealed and a set without hints say
nothing. The statistics page counts with the same matcher (tests/gradebook/test_mutant_likeness.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.submissions.models import Submission
from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.likeness import behaves_like, failure_vector
from graders.problemset.loader import load_problem_set
from tests.app.test_problemset_upload import upload, zip_dir
from tests.conftest import FIXTURE_SETS
from tests.gradebook.test_mutant_likeness import CORRECT, NUMBERS_ONLY, PRODUCT
from tests.web.conftest import login

HINTS = """\
    bug_hints:
      subtracts.py:
        en: "your add combines its inputs with the wrong operation: check the operator"
        zh_CN: "你的 add 用错了运算：检查运算符"
"""
ZH = {"Accept-Language": "zh-CN,zh;q=0.9"}
EN = {"Accept-Language": "en-US,en;q=0.9"}

# One app per module and backend (tests/conftest.py): each test starts from emptied rows and no cookie. The three
# API tests grade code, and a new app would start its sandbox for each; their uploads differ, but a stored version
# is unpacked under its content hash (app.problemsets.storage), so the shared data dir holds no stale set.
pytestmark = pytest.mark.shared_app


def hinted_set(tmp_path: Path, hints: str = HINTS) -> Path:
    root = tmp_path / "codeset"
    shutil.copytree(FIXTURE_SETS / "codeset", root)
    yaml = root / "problemset.yaml"
    yaml.write_text(yaml.read_text(encoding="utf-8") + hints, encoding="utf-8")
    return root


def _submit(client, account, code: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    body = {"problem_set": "codeset", "problem": "c1", "code": code}
    resp = client.post("/api/v1/submissions", params={"wait": 60}, json=body, headers=account.headers).json()
    assert resp["status"] == "graded", resp
    return resp  # type: ignore[no-any-return]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_the_hint_shows_for_a_known_mistake_only(client, accounts, tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert upload(client, accounts["instructor"], zip_dir(hinted_set(tmp_path))).status_code == 201
    alice = accounts["alice"]
    like_mutant = _submit(client, alice, PRODUCT)
    assert like_mutant["bug_hint"] == {
        "en": "your add combines its inputs with the wrong operation: check the operator",
        "zh_CN": "你的 add 用错了运算：检查运算符",
    }
    assert "subtracts" not in str(like_mutant)  # the mutant's file name is the instructor's, never shown
    no_match = _submit(client, alice, NUMBERS_ONLY)  # fails only some of the mutant's checks
    correct = _submit(client, alice, CORRECT)
    assert no_match["bug_hint"] is None and no_match["final_score"] < no_match["max_score"]
    assert correct["bug_hint"] is None and correct["final_score"] == correct["max_score"]

    login(client, alice)
    english = client.get(f"/submissions/{like_mutant['id']}", headers=EN).text
    assert 'lang="en"' in english and 'class="bug-hint"' in english
    assert "This looks like a known mistake:" in english and "check the operator" in english
    chinese = client.get(f"/submissions/{like_mutant['id']}", headers=ZH).text
    assert 'lang="zh' in chinese and 'class="bug-hint"' in chinese
    assert "这看起来像一个常见错误：" in chinese and "检查运算符" in chinese and "check the operator" not in chinese
    for silent in (no_match, correct):  # the pages say nothing of a known mistake, in either language
        for headers, lang in ((EN, 'lang="en"'), (ZH, 'lang="zh')):
            page = client.get(f"/submissions/{silent['id']}", headers=headers).text
            assert lang in page and 'class="check' in page, page[:500]  # the graded page, in that language
            assert 'class="bug-hint"' not in page and "known mistake" not in page and "常见错误" not in page
            assert "check the operator" not in page and "检查运算符" not in page


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_no_hint_while_results_are_sealed_or_when_the_set_has_none(client, accounts, sessions, tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert upload(client, accounts["instructor"], zip_dir(hinted_set(tmp_path))).status_code == 201
    alice = accounts["alice"]
    first = _submit(client, alice, PRODUCT)
    assert first["bug_hint"] is not None
    # The same submission while its scores are sealed (release "never"): the hint would give the verdict away.
    offering = first["offering"]
    assignments = client.get(f"/api/v1/offerings/{offering}/assignments", headers=accounts["instructor"].headers)
    (assignment,) = [a for a in assignments.json() if a["problem_set"] == "codeset"]
    patched = client.patch(
        f"/api/v1/assignments/{assignment['id']}",
        json={"release_scores": "never"},
        headers=accounts["instructor"].headers,
    )
    assert patched.status_code == 200, patched.text
    sealed = client.get(f"/api/v1/submissions/{first['id']}", headers=alice.headers).json()
    assert sealed["score"] is None and sealed["bug_hint"] is None

    with sessions() as session:
        assert session.get(Submission, first["id"]) is not None


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_hints_are_off_by_default(client, accounts) -> None:  # type: ignore[no-untyped-def]
    assert upload(client, accounts["instructor"], zip_dir(FIXTURE_SETS / "codeset")).status_code == 201
    assert _submit(client, accounts["alice"], PRODUCT)["bug_hint"] is None


def test_a_hint_must_name_a_mutant_of_its_problem(tmp_path: Path) -> None:
    root = hinted_set(tmp_path, HINTS.replace("subtracts.py", "multiplies.py"))
    with pytest.raises(ProblemSetInvalid, match=r"'multiplies\.py' is not a mutant of this problem"):
        load_problem_set(root)
    with pytest.raises(ProblemSetInvalid, match="not a mutant's file name"):
        load_problem_set(hinted_set(tmp_path / "b", HINTS.replace("subtracts.py", "../checks/c1.py")))


def test_the_matcher() -> None:
    gate = {
        "checks": [{"name": "a"}, {"name": "b"}],
        "files": [
            {"kind": "solution", "path": "ok.py", "checks": {"a": {"passed": True}, "b": {"passed": True}}},
            {"kind": "mutant", "path": "m1.py", "checks": {"a": {"passed": False}, "b": {"passed": True}}},
            {"kind": "mutant", "path": "slow.py", "checks": {"a": {"passed": True}, "b": {"passed": True}}},
        ],
    }
    assert behaves_like(gate, failure_vector([("a", False), ("b", True)], gate)) == ["m1.py"]
    assert behaves_like(gate, failure_vector([("a", True), ("b", True)], gate)) == []  # correct: like nothing
    assert behaves_like(gate, failure_vector([("a", False)], gate)) == []  # graded against other checks
    assert behaves_like(gate, failure_vector([("a", False), ("b", False)], gate)) == []
