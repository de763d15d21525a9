"""The parse bounds of graders.input_limits: each refuses just over its bound and accepts what real input looks like."""

from __future__ import annotations

import json

import pytest

from graders.input_limits import (
    MAX_JSON_DEPTH,
    MAX_PROMPT_BYTES,
    MAX_YAML_ALIASES,
    MAX_YAML_DEPTH,
    InputTooComplex,
    find_nul,
    json_depth,
    loads_json,
    safe_yaml_load,
    storable,
)
from graders.problemset.errors import ProblemSetInvalid
from graders.problemset.loader import load_problem_set
from tests.conftest import FIXTURE_SETS


def _nested_json(depth: int) -> str:
    return "[" * depth + "]" * depth


def _nested_yaml(depth: int) -> str:
    return "a: " + "[" * (depth - 1) + "]" * (depth - 1)  # the mapping is one level, each list another


def test_json_depth_bound() -> None:
    assert json_depth(loads_json(_nested_json(MAX_JSON_DEPTH))) == MAX_JSON_DEPTH
    with pytest.raises(InputTooComplex, match="nested more than"):
        loads_json(_nested_json(MAX_JSON_DEPTH + 1))
    with pytest.raises(InputTooComplex):  # past the C parser's own recursion guard
        loads_json(_nested_json(100_000))
    with pytest.raises(json.JSONDecodeError):
        loads_json("{")
    assert loads_json('{"b1": "V", "b2": ["x", {"y": 1}]}') == {"b1": "V", "b2": ["x", {"y": 1}]}


def test_yaml_depth_bound() -> None:
    assert safe_yaml_load(_nested_yaml(MAX_YAML_DEPTH)) is not None
    with pytest.raises(InputTooComplex, match=f"nested more than {MAX_YAML_DEPTH} levels"):
        safe_yaml_load(_nested_yaml(MAX_YAML_DEPTH + 1))


def test_yaml_alias_bounds() -> None:
    shared = "x: &x {a: 1}\n"
    ok = shared + "ys: [" + ", ".join(["*x"] * MAX_YAML_ALIASES) + "]\n"
    assert len(safe_yaml_load(ok)["ys"]) == MAX_YAML_ALIASES
    with pytest.raises(InputTooComplex, match="aliases"):
        safe_yaml_load(shared + "ys: [" + ", ".join(["*x"] * (MAX_YAML_ALIASES + 1)) + "]\n")
    with pytest.raises(InputTooComplex, match="recursive"):
        safe_yaml_load("a: &a {b: *a}\n")


def test_the_yaml_loader_is_safe() -> None:
    with pytest.raises(Exception, match="could not determine a constructor"):
        safe_yaml_load("!!python/object/apply:os.system ['true']\n")


def test_nul_search_and_storage() -> None:
    assert find_nul({"a": [1, {"b": "ok"}, "x\x00"]}) == "a[2]"
    assert find_nul({"k\x00": 1}) == "k\x00"
    assert find_nul({"a": ["fine"]}) is None
    assert storable("a\x00b") == "a\\x00b"


def test_a_prompt_over_the_bound_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import shutil

    root = tmp_path / "basic"
    shutil.copytree(FIXTURE_SETS / "basic", root)
    (root / "prompts" / "t2.md").write_text("x" * (MAX_PROMPT_BYTES + 1))
    with pytest.raises(ProblemSetInvalid) as info:
        load_problem_set(root)
    assert [e.file for e in info.value.errors] == ["prompts/t2.md"]
    assert str(MAX_PROMPT_BYTES) in info.value.errors[0].message
