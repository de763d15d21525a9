"""Jupyter notebooks (.ipynb) as code submissions: the code cells, joined in order, are the source that is stored,
graded and shown, exactly as if the student had uploaded that .py file.

The notebook is JSON: it is read with the project's bounded JSON reader and validated against nbformat's v4 schema;
nothing in it is executed, unpickled or rendered, and outputs and attachments are dropped here, so they are never
stored. Each cell begins with a marker line ``# %% cell N`` (the "percent" format that Jupytext, VS Code and Spyder
read), so the stored source itself says where every line came from: ``cell_of_line`` maps a line of the source back
to "cell N, line M" from those markers alone, with nothing else stored beside the submission.

IPython-only lines are not Python (``%time``, ``!pip install``, a ``%%capture`` header): each becomes ``pass`` with
the original line as a comment (so the line count and any enclosing block stay as they were) and is listed in the
notice shown with the grade. A cell in another language (``%%bash``, ``%%R``, ...) is refused: it cannot be run as
Python and silently dropping it could drop the student's work.

When any code cell is tagged with the problem's id (Otter-Grader's convention, the cell toolbar's "Tags"), only the
tagged cells count, so scratch cells elsewhere in the notebook cannot break the import.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from typing import Any

from app.errors import N_, Invalid
from graders.input_limits import InputTooComplex, loads_json

NOTEBOOK_SUFFIX = ".ipynb"
MARKER = "# %% cell "
_MARKER_LINE = re.compile(r"^# %% cell (\d+)$")
LEFT_OUT = "  # left out by the grader (IPython, not Python): "
# Cell magics whose body is still Python: the header line is left out, the body kept.
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug"})
_IPYTHON_LINE = re.compile(r"^(\s*)([%!].*)$")


@dataclass(frozen=True)
class NotebookSource:
    """The source to grade and what was left out of it (cell number, line in that cell, the line)."""

    source: str
    left_out: tuple[tuple[int, int, str], ...]


def is_notebook(filename: str | None) -> bool:
    return bool(filename) and str(filename).lower().endswith(NOTEBOOK_SUFFIX)


def source_from_notebook(
    data: bytes, *, name: str, problem_id: str | None, entrypoints: list[str] | None = None
) -> NotebookSource:
    """The Python source of a notebook's code cells; raises Invalid (a 422 naming the file) when it is not one."""
    notebook = _read(data, name)
    cells = [c for c in notebook["cells"] if c.get("cell_type") == "code"]
    numbered = [(n, c) for n, c in enumerate(notebook["cells"], start=1) if c.get("cell_type") == "code"]
    tagged = [(n, c) for n, c in numbered if problem_id and problem_id in (c.get("metadata", {}).get("tags") or [])]
    chosen = tagged or numbered
    if not cells:
        raise Invalid(N_("%(name)s has no code cells."), field="file", params={"name": name})
    lines: list[str] = []
    left_out: list[tuple[int, int, str]] = []
    for number, cell in chosen:
        lines.append(f"{MARKER}{number}")
        for line_no, line in enumerate(_cell_lines(cell, number, name), start=1):
            ipython = _IPYTHON_LINE.match(line)
            if ipython:
                left_out.append((number, line_no, ipython.group(2)))
                lines.append(f"{ipython.group(1)}pass{LEFT_OUT}{ipython.group(2)}")
            else:
                lines.append(line)
    source = "\n".join(lines) + "\n"
    if entrypoints is not None:
        require_entrypoints(source, entrypoints, name)
    return NotebookSource(source=source, left_out=tuple(left_out))


def _read(data: bytes, name: str) -> dict[str, Any]:
    import nbformat  # here, not at import: only a notebook upload pays for it

    not_a_notebook = Invalid(
        N_("%(name)s is not a Jupyter notebook (.ipynb saved by Jupyter or Colab)."),
        field="file", params={"name": name},
    )  # fmt: skip
    try:
        raw = loads_json(data.decode("utf-8").removeprefix("\ufeff"), what=name)
    except (UnicodeDecodeError, json.JSONDecodeError, InputTooComplex) as exc:
        raise not_a_notebook from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("cells"), list):
        raise not_a_notebook
    if raw.get("nbformat") != 4:
        raise Invalid(
            N_("%(name)s is saved in notebook format %(version)s; open it in Jupyter and save it again (format 4)."),
            field="file", params={"name": name, "version": str(raw.get("nbformat"))[:8]},
        )  # fmt: skip
    for cell in raw["cells"]:
        if isinstance(cell, dict):  # outputs and attachments are never read, never stored, never validated
            cell.pop("outputs", None)
            cell.pop("attachments", None)
            if cell.get("cell_type") == "code":
                cell["outputs"] = []
    try:
        notebook = nbformat.from_dict(raw)
        with warnings.catch_warnings():  # a missing cell id is a warning in nbformat 5 (a file older tools wrote)
            warnings.simplefilter("ignore")
            nbformat.validate(notebook)
    except Exception as exc:  # nbformat raises ValidationError and a few others for a malformed file
        raise not_a_notebook from exc
    language = (notebook.get("metadata", {}).get("kernelspec") or {}).get("language") or (
        notebook.get("metadata", {}).get("language_info") or {}
    ).get("name")
    if language and str(language).lower() != "python":
        raise Invalid(
            N_("%(name)s is a %(language)s notebook; this problem takes Python."),
            field="file", params={"name": name, "language": str(language)[:40]},
        )  # fmt: skip
    return dict(notebook)


def _cell_lines(cell: dict[str, Any], number: int, name: str) -> list[str]:
    source = cell.get("source", "")
    text = "".join(source) if isinstance(source, list) else str(source)
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split(maxsplit=1)[0] if first[2:].strip() else ""
        if magic not in _PYTHON_CELL_MAGICS:
            raise Invalid(
                N_("Cell %(cell)s of %(name)s is %%%%%(magic)s, not Python: delete that cell or move it to another "
                   "notebook, then upload again."),
                field="file", params={"cell": number, "name": name, "magic": magic[:40]},
            )  # fmt: skip
    return lines


def require_entrypoints(source: str, entrypoints: list[str], name: str = "the notebook") -> None:
    """Refuse a notebook none of whose counted cells defines an entry point (a 422 before any attempt is used)."""
    if not is_notebook_source(source):
        return
    for entry in entrypoints:
        defined = re.compile(
            rf"^(?:async\s+def|def|class)\s+{entry}\b|^{entry}\s*(?::[^=\n]*)?=(?!=)|^from\s+\S+\s+import\s.*\b{entry}\b",
            re.MULTILINE,
        )
        if not defined.search(source):
            raise Invalid(
                N_("No code cell of %(name)s defines %(entry)s: define it in a code cell (a cell tagged with the "
                   "problem's id, when any cell is tagged) and upload again."),
                field="file", params={"name": name, "entry": entry},
            )  # fmt: skip


def cell_of_line(source: str, line: int) -> tuple[int, int] | None:
    """(cell, line in that cell) of a line of a notebook's extracted source, or None when it is not from a notebook."""
    lines = source.split("\n")
    if line < 1 or line > len(lines):
        return None
    for index in range(line - 1, -1, -1):
        marker = _MARKER_LINE.match(lines[index])
        if marker:
            return (int(marker.group(1)), line - 1 - index) if index != line - 1 else None
    return None


def is_notebook_source(source: str) -> bool:
    return source.startswith(MARKER)


_LINE_REFERENCE = re.compile(r"\bline (\d+)\b")


def with_cells(text: str, source: str) -> str:
    """Feedback that cites "line N" of a notebook's source, citing "cell C, line L" instead (other text unchanged)."""
    if not is_notebook_source(source):
        return text

    def cite(match: re.Match[str]) -> str:
        found = cell_of_line(source, int(match.group(1)))
        return f"cell {found[0]}, line {found[1]}" if found else match.group(0)

    return _LINE_REFERENCE.sub(cite, text)


def left_out_notice(source: str) -> str | None:
    """One sentence for the student naming the IPython lines that were not graded, or None when there were none."""
    if not is_notebook_source(source):
        return None
    left_out: list[tuple[int, int, str]] = []
    cell, line_in_cell = 0, 0
    for line in source.split("\n"):  # one pass: the source may hold many thousands of lines
        marker = _MARKER_LINE.match(line)
        if marker:
            cell, line_in_cell = int(marker.group(1)), 0
            continue
        line_in_cell += 1
        if LEFT_OUT in line:
            left_out.append((cell, line_in_cell, line.split(LEFT_OUT, 1)[1]))
    if not left_out:
        return None
    shown = "; ".join(f"cell {cell}, line {line}: {text[:80]}" for cell, line, text in left_out[:10])
    more = f" and {len(left_out) - 10} more" if len(left_out) > 10 else ""
    return f"IPython lines are not graded and were left out ({shown}{more})."
