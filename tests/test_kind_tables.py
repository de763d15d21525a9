"""Nothing outside the kind tables asks which kind a spec or a problem is by its type.

The tables say it instead (``AnswerKind``: released key, aliases, grouping, purity; ``ProblemKind``; a problem's
``answer_parts()`` and ``instructor_code()``), so a new kind is known everywhere the day it is registered. This scans
every module of app/ and graders/ for ``isinstance``/``issubclass`` on an answer spec or problem model type, and
for a ``match`` case on one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import graders.kinds  # noqa: F401 - every problem kind registered
from graders.answers.specs import AnswerSpec
from graders.model import ProblemBase

REPO = Path(__file__).resolve().parents[1]
# The tables themselves, where a kind's type is what they are about.
TABLES = ("graders/answers/specs.py", "graders/answers/registry.py", "graders/model.py", "graders/kinds/")


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


# The kinds' own types; the bases themselves say nothing about a kind (``isinstance(problem, ProblemBase)`` tells a
# problem from its id).
KIND_TYPES = {c.__name__ for c in _subclasses(AnswerSpec) | _subclasses(ProblemBase)}


def type_tests(source: str, names: set[str] = KIND_TYPES) -> list[str]:
    """``line: text`` of each isinstance/issubclass or match case on one of ``names`` (or a local alias of one)."""
    tree = ast.parse(source)
    local = set(names)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            local |= {a.asname for a in node.names if a.name in names and a.asname}

    def named(expr: ast.expr) -> bool:
        if isinstance(expr, ast.Tuple):
            return any(named(e) for e in expr.elts)
        if isinstance(expr, ast.Name):
            return expr.id in local
        return isinstance(expr, ast.Attribute) and expr.attr in names

    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
            and named(node.args[1])
        ) or (isinstance(node, ast.MatchClass) and named(node.cls)):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_the_scan_sees_each_form() -> None:
    source = """
from graders.answers.specs import TextSpec as T
import graders.model
isinstance(spec, TextSpec)
isinstance(spec, (int, T))
issubclass(type(p), graders.model.CodeProblem)
match spec:
    case SymbolicSpec(answer=a):
        pass
isinstance(spec, dict)
"""
    assert [line.split(":")[0] for line in type_tests(source)] == ["4", "5", "6", "8"]


def test_no_type_test_on_a_kind_outside_the_tables() -> None:
    assert {"TextSpec", "SymbolicSpec", "FillInProblem", "CodeProblem", "ValueSpec"} <= KIND_TYPES
    offenders = []
    for package in ("app", "graders"):
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if rel.startswith(TABLES):
                continue
            offenders += [f"{rel}:{hit}" for hit in type_tests(path.read_text(encoding="utf-8"))]
    assert not offenders, "ask the kind's table instead (AnswerKind, ProblemKind, ProblemBase):\n" + "\n".join(
        offenders
    )
