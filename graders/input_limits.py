"""Every bound on parsing client or instructor input, in one place, with the parsers that enforce them.

Each parser of outside input (JSON bodies and multipart fields, problemset.yaml, Markdown prompts, archives, CSV
rosters) reads its bounds here, so the limits table of docs/api.md has one source. A parser refuses input over a bound
with a message that names the bound; none of them may recurse without one (a RecursionError is a 500).

Lives in graders/ because the problem-set loader (which never imports app/) needs the YAML bounds; app/ imports
the rest from here.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

# JSON: request bodies parsed by the API and free-form JSON fields (a multipart `answers` field, the CLI's
# --answers). Typed bodies are shallow; 32 levels leave room for any client's structure and none for a bomb.
MAX_JSON_DEPTH = 32
# A fill-in problem has a handful of parts; more keys than this is not a submission, and each unknown key would
# add a line to the error.
MAX_ANSWER_PARTS = 200
# At most this many errors are listed in one response; the rest are counted, so that 60 000 wrong fields cannot
# make a megabytes-long error body.
MAX_ERRORS_LISTED = 20
# One error message: a message that quotes input (an unknown part id, a file name) is cut here.
MAX_ERROR_MESSAGE_CHARS = 500

# YAML (problemset.yaml): the safe loader only, with a nesting bound and an alias bound. Aliases are counted twice:
# how many appear, and how many nodes the document has once every alias is expanded (a "billion laughs" document
# is small as text and as a graph, and enormous to anything that walks it, like pydantic or json.dumps).
MAX_YAML_BYTES = 1 << 20
MAX_YAML_DEPTH = 32
MAX_YAML_ALIASES = 100
MAX_YAML_EXPANDED_NODES = 100_000

# Markdown prompts and explanations: size (markdown-it is linear, but a prompt is read by people) and nesting
# (block quotes or lists nested deeper than this are rendered as text by markdown-it).
MAX_PROMPT_BYTES = 256 << 10
MAX_MARKDOWN_NESTING = 20

# CSV (rosters): whole file, rows, and one field.
MAX_CSV_BYTES = 2 << 20
MAX_CSV_ROWS = 10_000
MAX_CSV_FIELD_CHARS = 1_000

NUL = "\x00"
NUL_MESSAGE = "must not contain a NUL character (\\x00)"


def storable(text: str) -> str:
    """Text for a database column: a NUL (which PostgreSQL refuses) shown as the four characters ``\\x00``.

    For text built from input (feedback that quotes an answer): input is refused at the schema, but a submission
    stored before that, or by another path, must not make its grading fail on PostgreSQL.
    """
    return text.replace(NUL, "\\x00")


class InputTooComplex(ValueError):
    """Input over one of the bounds above, or text the database cannot store; the message says which."""


def loads_json(text: str | bytes, *, what: str = "the JSON") -> Any:
    """``json.loads`` with a depth bound; raises InputTooComplex for deep input, json.JSONDecodeError for bad."""
    try:
        value = json.loads(text)
    except RecursionError as exc:  # deeper than the C parser's own guard: far over the bound
        raise InputTooComplex(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep") from exc
    if json_depth(value) > MAX_JSON_DEPTH:
        raise InputTooComplex(f"{what} is nested more than {MAX_JSON_DEPTH} levels deep")
    return value


def json_depth(value: Any) -> int:
    """Nesting depth of parsed JSON (a scalar is 0, ``[]`` is 1), without recursion."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def find_nul(value: Any, path: str = "") -> str | None:
    """The path of the first string (key or value) holding a NUL, or None. PostgreSQL cannot store NUL in text."""
    stack = [(value, path)]
    while stack:
        node, where = stack.pop()
        if isinstance(node, str):
            if NUL in node:
                return where
        elif isinstance(node, dict):
            for key, child in node.items():
                child_path = f"{where}.{key}" if where else str(key)
                if isinstance(key, str) and NUL in key:
                    return child_path
                stack.append((child, child_path))
        elif isinstance(node, list):
            stack.extend((child, f"{where}[{i}]") for i, child in enumerate(node))
    return None


class _BoundedSafeLoader(yaml.SafeLoader):
    """SafeLoader (pure Python: the C loader's composer cannot be bounded) with a depth and an alias bound."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._aliases = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_YAML_ALIASES:
                raise InputTooComplex(f"more than {MAX_YAML_ALIASES} aliases (*name) in one document")
            return super().compose_node(parent, index)
        self._depth += 1
        if self._depth > MAX_YAML_DEPTH:
            mark = self.peek_event().start_mark
            raise InputTooComplex(
                f"nested more than {MAX_YAML_DEPTH} levels deep (line {mark.line + 1}, column {mark.column + 1})"
            )
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _expanded_size(root: yaml.Node) -> int:
    """Nodes in the document with every alias expanded, counted on the graph (memoised), never expanded.

    Raises InputTooComplex for a recursive alias (``&a [*a]``), which no schema of ours can hold.
    """
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:  # depth-first without recursion; a node is sized after its children
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise InputTooComplex("an alias refers to a node that contains it (a recursive alias)")
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node):
            if id(child) in on_path:
                raise InputTooComplex("an alias refers to a node that contains it (a recursive alias)")
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def safe_yaml_load(text: str) -> Any:
    """One YAML document as plain data, within the bounds above; raises InputTooComplex or yaml.YAMLError."""
    if len(text.encode("utf-8", "surrogatepass")) > MAX_YAML_BYTES:
        raise InputTooComplex(f"larger than {MAX_YAML_BYTES} bytes")
    loader = _BoundedSafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        expanded = _expanded_size(node)
        if expanded > MAX_YAML_EXPANDED_NODES:
            raise InputTooComplex(
                f"has {expanded} values once its aliases are expanded; the limit is {MAX_YAML_EXPANDED_NODES}"
            )
        return loader.construct_document(node)
    finally:
        loader.dispose()
