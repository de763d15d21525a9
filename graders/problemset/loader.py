"""Load a problem set from a folder: parse problemset.yaml with pydantic, check the files it names."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from graders.input_limits import MAX_PROMPT_BYTES, NUL_MESSAGE, InputTooComplex, find_nul, safe_yaml_load
from graders.model import ProblemBase, ProblemSetSpec
from graders.problemset.errors import ProblemSetInvalid, SetError
from graders.problemset.variants import prompt_names

SET_FILE = "problemset.yaml"
_SKIP_PARTS = {"__pycache__", ".git", ".DS_Store"}


@dataclass
class LoadedSet:
    """A parsed, file-checked problem set. ``files`` is everything in the folder, keyed by relative path."""

    root: Path
    spec: ProblemSetSpec
    files: dict[str, bytes] = field(repr=False)
    content_hash: str

    def text(self, rel: str) -> str:
        return self.files[rel].decode("utf-8")

    def prompt(self, problem_id: str) -> str:
        problem = self.spec.problem(problem_id)
        return self.text(problem.prompt) if problem else ""

    def explanation(self, problem_id: str) -> str | None:
        problem = self.spec.problem(problem_id)
        return self.text(problem.explanation) if problem and problem.explanation else None


def read_files(root: Path) -> dict[str, bytes]:
    files: dict[str, bytes] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_symlink():
            raise ProblemSetInvalid([SetError(str(rel), "", "links are not allowed in a problem set")])
        if path.is_file() and not any(part in _SKIP_PARTS for part in rel.parts):
            files[rel.as_posix()] = path.read_bytes()
    return files


def content_hash(files: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()


def format_loc(loc: tuple[Any, ...], data: Any) -> str:
    """('problems', 2, 'parts', 0, 'answer') -> 'problems[2] (q3).parts[0].answer'."""
    out, node = "", data
    for i, item in enumerate(loc):
        if isinstance(item, int):
            out += f"[{item}]"
            node = node[item] if isinstance(node, list) and item < len(node) else None
            if isinstance(node, dict) and "id" in node and loc[i - 1] == "problems":
                out += f" ({node['id']})"
        else:
            out += f".{item}" if out else str(item)
            node = node.get(item) if isinstance(node, dict) else None
    return out


def parse_spec(raw: bytes, file: str = SET_FILE) -> ProblemSetSpec:
    try:
        data = safe_yaml_load(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ProblemSetInvalid([SetError(file, "", f"not UTF-8 text: {exc}")]) from exc
    except InputTooComplex as exc:
        raise ProblemSetInvalid([SetError(file, "", f"refused YAML: {exc}")]) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ProblemSetInvalid([SetError(file, where, f"invalid YAML: {getattr(exc, 'problem', exc)}")]) from exc
    if not isinstance(data, dict):
        raise ProblemSetInvalid([SetError(file, "", "expected a mapping with id, title and problems")])
    # The spec is stored as JSON: PostgreSQL refuses a NUL in it, so refuse it here, the same on both backends.
    nul_at = find_nul(data)
    if nul_at is not None:
        raise ProblemSetInvalid([SetError(file, nul_at, f"text {NUL_MESSAGE}")])
    try:
        return ProblemSetSpec.model_validate(data)
    except ValidationError as exc:
        errors = [SetError(file, format_loc(tuple(e["loc"]), data), _message(e)) for e in exc.errors()]
        raise ProblemSetInvalid(errors) from exc


def _message(error: Any) -> str:
    msg = str(error["msg"])
    if error["type"] == "missing":
        return "required field is missing"
    if error["type"] == "extra_forbidden":
        return "unknown field (check the spelling)"
    return msg.removeprefix("Value error, ")


def check_files(spec: ProblemSetSpec, files: dict[str, bytes]) -> list[SetError]:
    """Every file the YAML names must exist; prompts must be UTF-8 Markdown."""
    errors: list[SetError] = []
    for index, problem in enumerate(spec.problems):
        where = f"problems[{index}] ({problem.id})"
        named = [("prompt", problem.prompt), ("explanation", problem.explanation)]
        code = problem.instructor_code()
        if code is not None:
            named.append(("checks", code.checks))
        if problem.generator is not None:
            named.append(("generator", problem.generator))
            errors += _parameter_errors(problem, where, files)
        for key, rel in named:
            if rel is None:
                continue
            if rel not in files:
                errors.append(SetError(SET_FILE, f"{where}.{key}", f"file {rel!r} not found in the set"))
                continue
            try:
                text = files[rel].decode("utf-8")
            except UnicodeDecodeError:
                errors.append(SetError(rel, "", "not UTF-8 text"))
                continue
            if key not in ("checks", "generator") and len(files[rel]) > MAX_PROMPT_BYTES:
                errors.append(SetError(rel, "", f"{len(files[rel])} bytes; a prompt is at most {MAX_PROMPT_BYTES}"))
            elif key not in ("checks", "generator") and "\x00" in text:
                errors.append(SetError(rel, "", f"a prompt {NUL_MESSAGE}"))
        if code is not None:
            prefix = code.solutions.rstrip("/") + "/"
            if not any(name.startswith(prefix) and name.endswith(".py") for name in files):
                errors.append(SetError(SET_FILE, f"{where}.solutions", f"no reference solution (*.py) under {prefix}"))
            mutants = code.mutants.rstrip("/") + "/"
            errors += [
                SetError(SET_FILE, f"{where}.bug_hints", f"{name!r} is not a mutant of this problem (under {mutants})")
                for name in code.bug_hints
                if mutants + name not in files
            ]
    return errors


def _parameter_errors(problem: ProblemBase, where: str, files: dict[str, bytes]) -> list[SetError]:
    """A parameterised problem has answer parts, and its prompt and accept/reject examples name only parameters it
    declares."""
    if not problem.part_ids() or not problem.answer_parts() or problem.kind != "fill_in":
        return [SetError(SET_FILE, f"{where}.generator", "only a fill_in problem may have a generator (for now)")]
    errors = []
    for rel in (problem.prompt, problem.explanation):
        text = files.get(rel, b"").decode("utf-8", errors="replace") if rel else ""
        unknown = sorted(prompt_names(text) - set(problem.parameters))
        if rel and unknown:
            errors.append(SetError(rel, "", f"names {unknown}, which are not among the parameters"))
    for part_id, spec in zip(problem.part_ids(), problem.answer_parts(), strict=False):
        for verb, cases in (("accept", spec.accept), ("reject", spec.reject)):
            for case in cases:
                unknown = sorted(prompt_names(case) - set(problem.parameters))
                if unknown:
                    message = f"{case!r} names {unknown}, which are not among the parameters"
                    errors.append(SetError(SET_FILE, f"{where}.{part_id}.{verb}", message))
    return errors


def load_problem_set(root: Path) -> LoadedSet:
    """Parse and file-check the set in ``root``; raises ProblemSetInvalid listing every error."""
    root = root.resolve()
    if not (root / SET_FILE).is_file():
        raise ProblemSetInvalid([SetError(SET_FILE, "", f"not found in {root.name}/")])
    files = read_files(root)
    spec = parse_spec(files[SET_FILE])
    errors = check_files(spec, files)
    if errors:
        raise ProblemSetInvalid(errors)
    return LoadedSet(root=root, spec=spec, files=files, content_hash=content_hash(files))
