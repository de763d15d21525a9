"""A new answer kind and a new problem kind, each added through its table alone (docs/extending.md's recipes).

Nothing outside the registration is touched: the problem-set parser, the validator, the grader entry point, the
student view and the released answer key all learn the new kind from the tables. test_recipes.py follows the
recipes themselves, file by file, in a copy of graders/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import Field

from graders.answers.normalize import precheck, right, wrong
from graders.answers.registry import ANSWER_KINDS, AnswerKind, register_answer_kind
from graders.answers.specs import AnswerSpec
from graders.grade import answer_key, check_payload, grade_submission, problem_view, validate_set
from graders.kinds import PROBLEM_KINDS, PayloadInvalid, register_problem_kind
from graders.kinds.answers import FillInKind
from graders.model import PROBLEM_MODELS, ProblemBase, register_problem_model
from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.loader import load_problem_set
from graders.results import CheckResult, GradeResult, PartResult, Verdict, verdict_from_checks


class ParitySpec(AnswerSpec):
    """A toy kind: an integer that must be even (or odd)."""

    kind: Literal["parity"]
    even: bool = True


def grade_parity(submitted: str, spec: ParitySpec) -> PartResult:
    rejected = precheck(submitted, limit=40)
    if rejected is not None:
        return rejected
    try:
        value = int(submitted.strip())
    except ValueError:
        return wrong("not a whole number")
    return right(str(value)) if (value % 2 == 0) == spec.even else wrong("wrong parity")


def parity_key(spec: ParitySpec) -> str:
    return "an even number" if spec.even else "an odd number"


@pytest.fixture
def parity_kind() -> Iterator[AnswerKind]:
    kind = register_answer_kind(AnswerKind(ParitySpec, grade_parity, "a whole number, e.g. 7", key=parity_key))
    yield kind
    del ANSWER_KINDS["parity"]


def test_an_answer_kind_without_an_answer_field_must_say_its_key() -> None:
    # Otherwise a released answer key would be silently empty for every part of the kind.
    with pytest.raises(ValueError, match="ParitySpec has no 'answer' field, so give AnswerKind a key"):
        register_answer_kind(AnswerKind(ParitySpec, grade_parity, "a whole number, e.g. 7"))
    with pytest.raises(ValueError, match="aliases names 'answers', not a field of its spec"):
        register_answer_kind(AnswerKind(ParitySpec, grade_parity, "a number", key=parity_key, aliases="answers"))
    assert "parity" not in ANSWER_KINDS


def _write_set(root: Path, problems_yaml: str) -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "prompts" / "p.md").write_text("Which number? (b1)\n", encoding="utf-8")
    (root / "problemset.yaml").write_text(f"id: toy\ntitle: Toy\nproblems:\n{problems_yaml}", encoding="utf-8")
    return root


PARITY_SET = """\
  - id: q1
    title: Even
    kind: fill_in
    prompt: prompts/p.md
    parts:
      - {kind: parity, even: true, points: 2, accept: ["4", " 10 "], reject: ["3", "four"]}
"""


def test_an_answer_kind_is_unknown_until_registered(tmp_path: Path) -> None:
    with pytest.raises(ProblemSetInvalid) as caught:
        load_problem_set(_write_set(tmp_path, PARITY_SET))
    assert "unknown answer kind 'parity'" in str(caught.value.errors[0])


def test_a_registered_answer_kind_loads_validates_grades_and_shows(tmp_path: Path, parity_kind: AnswerKind) -> None:
    loaded = load_problem_set(_write_set(tmp_path, PARITY_SET))
    report = validate_set(loaded, code_grader=None)
    assert report.ok, report.render_text()
    assert report.answer_cases == 4 and report.points == {"q1": 2.0}

    good = grade_submission(loaded, "q1", {"answers": {"b1": "12"}}, _no_sandbox)
    bad = grade_submission(loaded, "q1", {"answers": {"b1": "7"}}, _no_sandbox)
    assert (good.verdict, good.score, good.max_score) == (Verdict.ACCEPTED, 2.0, 2.0)
    assert (bad.verdict, bad.score, bad.checks[0].feedback) == (Verdict.WRONG_ANSWER, 0.0, "wrong parity")

    part = problem_view(loaded.spec.problems[0], loaded, 2.0)["parts"][0]
    assert part == {"id": "b1", "kind": "parity", "points": 2.0, "hint": "a whole number, e.g. 7", "widget": "line"}
    assert answer_key(loaded.spec.problems[0]) == {"b1": "an even number"}
    assert not parity_kind.takes_aliases and parity_kind.normalized(" 12 ", loaded.spec.problems[0].parts[0]) == "12"


def test_a_wrong_accept_case_of_a_new_kind_refuses_the_set(tmp_path: Path, parity_kind: AnswerKind) -> None:
    loaded = load_problem_set(_write_set(tmp_path, PARITY_SET.replace('accept: ["4"', 'accept: ["5"')))
    report = validate_set(loaded, code_grader=None)
    assert not report.ok
    assert "'5' should be accepted: wrong parity" in str(report.errors[0])


class OrderingProblem(ProblemBase):
    """A toy problem kind: put the items in order; graded all or nothing, one part b1 ("c,a,b")."""

    kind: Literal["ordering"]
    items: list[str] = Field(min_length=2)
    order: list[str]
    points: float = 1.0

    def part_ids(self) -> list[str]:
        return ["b1"]


class OrderingKind(FillInKind):
    model = OrderingProblem
    takes_aliases = False  # its one part is not a list in problemset.yaml that an alias could join

    def parts(self, problem: Any) -> list[AnswerSpec]:
        return []  # graded as a whole below, not part by part

    def grade(self, problem: Any, payload: dict[str, Any], ctx: Any) -> GradeResult:
        given = [x.strip() for x in payload["answers"].get("b1", "").split(",")]
        ok = given == problem.order
        check = CheckResult("b1", "answer", ok, problem.points if ok else 0.0, problem.points, "in order" if ok else "")
        return GradeResult(verdict_from_checks([check]), [check])

    def validate(self, problem: Any, ctx: Any) -> None:
        ctx.report.points[problem.id] = problem.points

    def view(self, problem: Any) -> dict[str, Any]:
        return {"parts": [{"id": "b1", "kind": "ordering", "points": problem.points}], "items": problem.items}


@pytest.fixture
def ordering_kind() -> Iterator[None]:
    register_problem_model(OrderingProblem)  # in the tree: the list at the bottom of graders/model.py
    register_problem_kind(OrderingKind())
    yield
    del PROBLEM_KINDS["ordering"], PROBLEM_MODELS["ordering"]


def test_a_problem_kind_whose_model_the_set_model_does_not_know_is_refused() -> None:
    # Registering the model only with the behaviour would make loading a set depend on importing graders.kinds.
    with pytest.raises(ValueError, match="register OrderingProblem with the problem-set model first"):
        register_problem_kind(OrderingKind())
    assert "ordering" not in PROBLEM_KINDS


ORDERING_SET = """\
  - id: q1
    title: Order the steps
    kind: ordering
    prompt: prompts/p.md
    items: [softmax, scores, weighted sum]
    order: [scores, softmax, weighted sum]
    points: 3
"""


def test_a_registered_problem_kind_loads_takes_answers_and_grades(tmp_path: Path, ordering_kind: None) -> None:
    loaded = load_problem_set(_write_set(tmp_path, ORDERING_SET))
    problem = loaded.spec.problems[0]
    assert isinstance(problem, OrderingProblem)
    assert validate_set(loaded, code_grader=None).points == {"q1": 3.0}

    payload = check_payload(problem, answers={"b1": "scores, softmax, weighted sum"}, code=None)
    assert grade_submission(loaded, "q1", payload, _no_sandbox).score == 3.0
    with pytest.raises(PayloadInvalid, match="unknown part 'b2'"):
        check_payload(problem, answers={"b2": "x"}, code=None)
    view = problem_view(problem, loaded, 3.0)
    assert view["takes"] == "answers" and view["items"] == ["softmax", "scores", "weighted sum"]
    # The stored spec (what the database keeps) round-trips through the model with the kind's own fields.
    assert loaded.spec.model_dump(mode="json")["problems"][0]["order"] == ["scores", "softmax", "weighted sum"]


def test_a_problem_kind_is_unknown_until_registered(tmp_path: Path) -> None:
    with pytest.raises(ProblemSetInvalid) as caught:
        load_problem_set(_write_set(tmp_path, ORDERING_SET))
    assert "unknown problem kind 'ordering'" in str(caught.value.errors[0])


def _no_sandbox() -> Any:
    raise AssertionError("answer problems never start the sandbox")
