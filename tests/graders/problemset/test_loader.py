"""Loading a set folder: every error names the file, the path inside it and what was expected.

parse_spec is tested on YAML built from a small valid set (``base_spec``) with one thing broken at a time;
load_problem_set on folders written to tmp_path, so that missing, non-UTF-8 and linked files can be planted.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from graders.problemset.errors import ProblemSetInvalid, SetError
from graders.problemset.loader import SET_FILE, load_problem_set, parse_spec


def base_spec() -> dict[str, Any]:
    """Valid: a choice (t1), a fill-in with a number and a word (t2), a manual problem (t3), a code problem (c1)."""
    return {
        "id": "unit",
        "title": "Unit test set",
        "problems": [
            {
                "id": "t1",
                "kind": "choice",
                "title": "Choice",
                "prompt": "prompts/t1.md",
                "options": {"A": "one", "B": "two"},
                "answer": ["B"],
            },
            {
                "id": "t2",
                "kind": "fill_in",
                "title": "Fill in",
                "prompt": "prompts/t2.md",
                "explanation": "prompts/t2_explanation.md",
                "parts": [{"kind": "numeric", "answer": 32}, {"kind": "text", "answers": ["encoder"]}],
            },
            {
                "id": "t3",
                "kind": "manual",
                "title": "Essay",
                "prompt": "prompts/t3.md",
                "rubric": [{"id": "r1", "points": 2, "description": "names the controls"}],
            },
            {
                "id": "c1",
                "kind": "code",
                "title": "Code",
                "prompt": "prompts/c1.md",
                "entrypoints": ["add"],
                "checks": "checks/c1.py",
            },
        ],
    }


BASE_FILES = {
    "prompts/t1.md": "# t1\n",
    "prompts/t2.md": "# t2 (b1) (b2)\n",
    "prompts/t2_explanation.md": "Because.\n",
    "prompts/t3.md": "# t3\n",
    "prompts/c1.md": "# c1\n",
    "checks/c1.py": "from graders.code.checks import check\n",
    "solutions/c1/plain.py": "def add(a, b):\n    return a + b\n",
}


def dump(spec: dict[str, Any]) -> bytes:
    return yaml.safe_dump(spec, allow_unicode=True, sort_keys=False).encode()


def write_set(root: Path, spec: dict[str, Any] | None = None, files: dict[str, str] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / SET_FILE).write_bytes(dump(spec if spec is not None else base_spec()))
    for rel, text in (BASE_FILES if files is None else files).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def spec_errors(raw: bytes, file: str = SET_FILE) -> list[SetError]:
    with pytest.raises(ProblemSetInvalid) as info:
        parse_spec(raw, file)
    return info.value.errors


def load_errors(root: Path) -> list[SetError]:
    with pytest.raises(ProblemSetInvalid) as info:
        load_problem_set(root)
    return info.value.errors


def test_the_base_set_is_valid(tmp_path):
    loaded = load_problem_set(write_set(tmp_path / "unit"))
    assert [p.id for p in loaded.spec.problems] == ["t1", "t2", "t3", "c1"]
    assert loaded.prompt("t2") == "# t2 (b1) (b2)\n" and loaded.explanation("t2") == "Because.\n"
    assert loaded.explanation("t1") is None


# --- schema errors: where and what -------------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]


def _set(path: tuple[Any, ...], value: Any) -> Mutation:
    def mutate(spec: dict[str, Any]) -> None:
        node = spec
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return mutate


def _delete(path: tuple[Any, ...]) -> Mutation:
    def mutate(spec: dict[str, Any]) -> None:
        node = spec
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return mutate


SCHEMA_ERRORS: dict[str, tuple[Mutation, str, str]] = {
    "part_answer": (
        _set(("problems", 1, "parts", 0, "answer"), "thirty-two"),
        "problems[1] (t2).parts[0].answer",
        "valid number",
    ),
    "unknown_problem_field": (_set(("problems", 1, "titel"), "x"), "problems[1] (t2).titel", "unknown field"),
    "unknown_part_field": (
        _set(("problems", 1, "parts", 1, "answer"), "encoder"),
        "problems[1] (t2).parts[1].answer",
        "unknown field",
    ),
    "unknown_top_field": (_set(("dew_at",), "2030-01-01"), "dew_at", "unknown field (check the spelling)"),
    "unknown_answer_kind": (
        _set(("problems", 1, "parts", 0, "kind"), "txet"),
        "problems[1] (t2).parts[0]",
        "unknown answer kind 'txet'; expected one of ",
    ),
    "part_not_a_mapping": (_set(("problems", 1, "parts", 0), "text"), "problems[1] (t2).parts[0]", "a kind"),
    "unknown_problem_kind": (
        _set(("problems", 2, "kind"), "quiz"),
        "problems[2] (t3)",
        "unknown problem kind 'quiz'; expected one of choice, code, fill_in, manual",
    ),
    "missing_field": (_delete(("problems", 0, "title")), "problems[0] (t1).title", "required field is missing"),
    "missing_top_field": (_delete(("title",)), "title", "required field is missing"),
    "choice_answer": (_set(("problems", 0, "answer"), ["Z"]), "problems[0] (t1)", "answer ['Z'] not among options"),
    "path_outside": (
        _set(("problems", 2, "prompt"), "../secret.md"),
        "problems[2] (t3).prompt",
        "must be a relative path inside the set",
    ),
    "code_limit": (_set(("problems", 3, "limits"), {"time_s": 301}), "problems[3] (c1).limits.time_s", "300"),
    "entrypoint": (_set(("problems", 3, "entrypoints"), ["not valid"]), "problems[3] (c1)", "not a Python identifier"),
    "manual_without_rubric": (_set(("problems", 2, "rubric"), []), "problems[2] (t3)", "at least one rubric item"),
    "late_policy": (_set(("late_policy",), {"penalty_per_day": 2}), "late_policy.penalty_per_day", "1"),
    "no_id_keeps_index": (_delete(("problems", 1, "id")), "problems[1].id", "required field is missing"),
}


@pytest.mark.parametrize(("mutate", "path", "message"), SCHEMA_ERRORS.values(), ids=SCHEMA_ERRORS.keys())
def test_schema_errors_name_their_location(mutate, path, message):
    spec = base_spec()
    mutate(spec)
    errors = spec_errors(dump(spec))
    assert [(e.file, e.path) for e in errors] == [(SET_FILE, path)], errors
    assert message in errors[0].message
    assert str(errors[0]) == f"{SET_FILE}: {path}: {errors[0].message}"


def test_every_schema_error_is_listed_not_just_the_first():
    spec = base_spec()
    _set(("problems", 1, "titel"), "x")(spec)
    _set(("problems", 3, "limits"), {"memory_mb": 1})(spec)
    _delete(("problems", 0, "options"))(spec)
    paths = {e.path for e in spec_errors(dump(spec))}
    assert paths == {"problems[1] (t2).titel", "problems[3] (c1).limits.memory_mb", "problems[0] (t1).options"}


def test_duplicate_problem_ids_are_an_error_of_the_set():
    spec = base_spec()
    spec["problems"][2]["id"] = "t1"
    errors = spec_errors(dump(spec))
    assert len(errors) == 1 and "duplicate problem ids: ['t1']" in errors[0].message


# --- not YAML, not UTF-8, not a mapping --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "where", "problem"),
    [
        (b"id: s\ntitle: [unclosed\nproblems: []\n", "line 3, column 9", "expected ',' or ']'"),
        (b"id: s\n  title: x\n", "line 2, column 8", "mapping values are not allowed here"),
        (b"id: s\ntitle: x\nproblems:\n\t- id: t1\n", "line 4, column 1", "found character '\\t'"),
    ],
    ids=["unclosed_flow", "bad_indent", "tab"],
)
def test_yaml_syntax_errors_give_line_and_column(raw, where, problem):
    errors = spec_errors(raw)
    assert [(e.file, e.path) for e in errors] == [(SET_FILE, where)]
    assert errors[0].message.startswith("invalid YAML: ") and problem in errors[0].message


def test_a_yaml_file_that_is_not_utf8_is_refused():
    errors = spec_errors("id: s\ntitle: Übung\n".encode("latin-1"))
    assert [(e.file, e.path) for e in errors] == [(SET_FILE, "")]
    assert errors[0].message.startswith("not UTF-8 text")


@pytest.mark.parametrize("raw", [b"", b"- a\n- b\n", b"just a string\n", b"42\n"], ids=["empty", "list", "str", "int"])
def test_the_top_level_must_be_a_mapping(raw):
    errors = spec_errors(raw)
    assert [e.message for e in errors] == ["expected a mapping with id, title and problems"]


def test_the_file_name_is_reported_as_given():
    assert [e.file for e in spec_errors(b"id: [\n", "sets/other.yaml")] == ["sets/other.yaml"]
    assert [e.file for e in spec_errors(b"- a\n", "sets/other.yaml")] == ["sets/other.yaml"]


# --- the files the YAML names ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("missing", "path"),
    [
        ("prompts/t3.md", "problems[2] (t3).prompt"),
        ("prompts/t2_explanation.md", "problems[1] (t2).explanation"),
        ("checks/c1.py", "problems[3] (c1).checks"),
    ],
)
def test_a_missing_file_is_named_with_the_field_that_names_it(tmp_path, missing, path):
    files = {k: v for k, v in BASE_FILES.items() if k != missing}
    errors = load_errors(write_set(tmp_path / "unit", files=files))
    assert errors == [SetError(SET_FILE, path, f"file {missing!r} not found in the set")]


def test_every_missing_file_is_listed(tmp_path):
    files = {k: v for k, v in BASE_FILES.items() if k not in ("prompts/t1.md", "prompts/c1.md")}
    errors = load_errors(write_set(tmp_path / "unit", files=files))
    assert [e.path for e in errors] == ["problems[0] (t1).prompt", "problems[3] (c1).prompt"]


def test_a_prompt_that_is_not_utf8_is_named(tmp_path):
    root = write_set(tmp_path / "unit")
    (root / "prompts" / "t2.md").write_bytes("# Übung\n".encode("latin-1"))
    assert load_errors(root) == [SetError("prompts/t2.md", "", "not UTF-8 text")]


def test_a_gradable_code_problem_needs_a_reference_solution(tmp_path):
    files = {k: v for k, v in BASE_FILES.items() if not k.startswith("solutions/")}
    files["solutions/c1/README.md"] = "not a solution\n"
    files["solutions/c10/plain.py"] = "def add(a, b):\n    return a + b\n"  # another problem's folder
    errors = load_errors(write_set(tmp_path / "unit", files=files))
    assert errors == [
        SetError(SET_FILE, "problems[3] (c1).solutions", "no reference solution (*.py) under solutions/c1/")
    ]


def test_a_code_problem_that_is_not_gradable_needs_no_checks_nor_solutions(tmp_path):
    spec = base_spec()
    spec["problems"][3]["gradable"] = False
    files = {k: v for k, v in BASE_FILES.items() if not k.startswith(("checks/", "solutions/"))}
    loaded = load_problem_set(write_set(tmp_path / "unit", spec, files))
    assert loaded.spec.problem("c1").gradable is False  # type: ignore[union-attr]


def test_a_folder_without_problemset_yaml_is_refused(tmp_path):
    folder = tmp_path / "empty-set"
    folder.mkdir()
    assert load_errors(folder) == [SetError(SET_FILE, "", "not found in empty-set/")]


# --- links and what is read --------------------------------------------------------------------------------------


def test_a_linked_file_inside_a_set_is_refused(tmp_path):
    outside = tmp_path / "outside.md"
    outside.write_text("# not part of the set\n")
    root = write_set(tmp_path / "unit")
    (root / "prompts" / "t1.md").unlink()
    (root / "prompts" / "t1.md").symlink_to(outside)
    assert load_errors(root) == [SetError("prompts/t1.md", "", "links are not allowed in a problem set")]


def test_a_linked_folder_inside_a_set_is_refused(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "secret.py").write_text("KEY = 1\n")
    root = write_set(tmp_path / "unit")
    (root / "extra").symlink_to(elsewhere, target_is_directory=True)
    assert load_errors(root) == [SetError("extra", "", "links are not allowed in a problem set")]


def test_caches_and_vcs_folders_are_not_part_of_the_set(tmp_path):
    root = write_set(tmp_path / "unit")
    for junk in ("checks/__pycache__/c1.cpython-311.pyc", ".git/HEAD", "prompts/.DS_Store/x"):
        (root / junk).parent.mkdir(parents=True, exist_ok=True)
        (root / junk).write_bytes(b"\0junk")
    loaded = load_problem_set(root)
    assert sorted(loaded.files) == sorted([SET_FILE, *BASE_FILES])


def test_the_content_hash_follows_content_not_location(tmp_path):
    first = load_problem_set(write_set(tmp_path / "a"))
    second = load_problem_set(write_set(tmp_path / "b"))
    assert first.content_hash == second.content_hash
    changed_files = {**BASE_FILES, "prompts/t1.md": "# t1, reworded\n"}
    changed = load_problem_set(write_set(tmp_path / "c", files=changed_files))
    assert changed.content_hash != first.content_hash
    renamed_files = {k: v for k, v in BASE_FILES.items() if k != "solutions/c1/plain.py"}
    renamed_files["solutions/c1/zz.py"] = BASE_FILES["solutions/c1/plain.py"]  # same bytes, same order, new name
    renamed = load_problem_set(write_set(tmp_path / "d", files=renamed_files))
    assert renamed.content_hash != first.content_hash
