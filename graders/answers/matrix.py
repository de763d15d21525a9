"""Matrix and vector answers: read the layout the student used, then compare elementwise with rtol/atol.

Accepted layouts: ``[[1, 2], [3, 4]]``, ``[1, 2], [3, 4]``, ``1 2; 3 4``, rows on separate lines, NumPy's printed
form ``[[1. 2.]\\n [3. 4.]]``, LaTeX ``\\begin{bmatrix}1 & 2 \\\\ 3 & 4\\end{bmatrix}``, vectors ``[1, 2]`` / ``1, 2``
/ ``(1, 2)``, and full-width brackets and commas. Entries may be expressions (``1/sqrt(2)``).
"""

from __future__ import annotations

import math
import re

from graders.answers.expr_errors import ExprEvalError, ExprSyntaxError, ExprTooBig
from graders.answers.normalize import fold_width, precheck, quote, right, wrong
from graders.answers.safe_expr import evaluate, parse_expression
from graders.answers.specs import MatrixSpec
from graders.results import PartResult

MAX_ENTRIES = 4096
_OPEN, _CLOSE = "([", ")]"
_LATEX_ENV = re.compile(r"\\(?:begin|end)\{[a-zA-Z]*\*?\}")
_OPERATOR_END = tuple("+-*/^(")
_OPERATOR_START = tuple("*/^)")

Grid = list[list[str]]


class MatrixSyntaxError(ValueError):
    """The layout cannot be read; the message is student-safe."""


def _split_top(text: str, seps: str) -> list[str]:
    """Split on any char of ``seps`` outside brackets, so ``exp(1), 2`` gives two entries."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in _OPEN) - (c in _CLOSE)
        if depth == 0 and c in seps:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return parts


def _wrapped(text: str) -> bool:
    """True when one bracket pair encloses the whole text: ``[1, 2]`` yes, ``(1)+(2)`` no."""
    if len(text) < 2 or text[0] not in _OPEN or text[-1] not in _CLOSE:
        return False
    depth = 0
    for i, c in enumerate(text):
        depth += (c in _OPEN) - (c in _CLOSE)
        if depth == 0 and i < len(text) - 1:
            return False
    return depth == 0


def _unwrap(text: str) -> str:
    return text[1:-1].strip() if _wrapped(text) else text


def _entries(row: str) -> list[str]:
    """Entries of one row: comma-separated, else space-separated (``1 -2`` is two entries, ``1 - 2`` is one)."""
    if len(_split_top(row, ",")) > 1:
        return _split_top(row, ",")
    entries: list[str] = []
    for token in _split_top(" ".join(row.split()), " "):
        joins = entries and (entries[-1].endswith(_OPERATOR_END) or token.startswith(_OPERATOR_START))
        if joins or (entries and token in ("+", "-")):
            entries[-1] += " " + token
        else:
            entries.append(token)
    return [e for e in entries if e]


def _is_row_list(items: list[str]) -> bool:
    # [1, 2], [3, 4] are rows; (1, 2), (3, 4) too, but (1+2) alone is an entry in parentheses.
    return all(i.startswith("[") and _wrapped(i) for i in items) or all(
        _wrapped(i) and len(_entries(_unwrap(i))) > 1 for i in items
    )


def _prepare(text: str) -> str:
    text = fold_width(text)
    if "\\begin" in text:
        text = _LATEX_ENV.sub("", text).replace("\\\\", ";").replace("&", ",")
    elif "\\" not in text:
        text = text.replace("{", "[").replace("}", "]")  # Mathematica-style {{1, 2}, {3, 4}}
    return text.strip().rstrip("。.;").strip()


def read_grid(text: str) -> tuple[Grid, bool]:
    """Split the answer into entry strings.

    Returns:
        (rows of entry texts, True when written as a matrix rather than a flat vector).

    Raises:
        MatrixSyntaxError: unbalanced brackets, empty entries or rows of different lengths.
    """
    body = _unwrap(_prepare(text))
    rows = [r for r in _split_top(body, ";\n") if r]
    if len(rows) == 1:
        items = _entries(rows[0])
        if len(items) >= 1 and _is_row_list(items):
            rows = items
        else:
            return [items], False
    grid = [_entries(_unwrap(r)) for r in rows]
    if not grid or not all(grid):
        raise MatrixSyntaxError("there are no entries")
    if any(len(r) != len(grid[0]) for r in grid):
        raise MatrixSyntaxError("the rows have different lengths")
    return grid, True


def _values(grid: Grid) -> list[list[float]]:
    if sum(len(r) for r in grid) > MAX_ENTRIES:
        raise ExprTooBig("too many entries")
    values = []
    for row in grid:
        out = []
        for entry in row:
            if not entry:
                raise MatrixSyntaxError("an entry is empty")
            try:
                out.append(evaluate(parse_expression(entry)))
            except ExprSyntaxError as err:
                raise MatrixSyntaxError(f"could not read the entry {quote(entry, 20)} as a number") from err
        values.append(out)
    return values


def _shape_text(shape: tuple[int, ...]) -> str:
    return f"a vector of length {shape[0]}" if len(shape) == 1 else f"a {shape[0]}×{shape[1]} matrix"


def _fit(values: list[list[float]], is_matrix: bool, expected: tuple[int, ...]) -> list[float] | None:
    """Flatten the student's values when their shape fits the expected one, else None.

    A vector answer also fits as a single row or column, and a 1×n or n×1 matrix as a flat list of n numbers.
    """
    flat = [v for row in values for v in row]
    rows, cols = len(values), len(values[0])
    got = (rows, cols) if is_matrix else (cols,)
    if got == expected:
        return flat
    is_line = rows == 1 or cols == 1
    fits_vector = len(expected) == 1 and is_line and len(flat) == expected[0]
    fits_line_matrix = not is_matrix and len(expected) == 2 and 1 in expected and len(flat) == max(expected)
    return flat if fits_vector or fits_line_matrix else None


def _expected(spec: MatrixSpec) -> tuple[list[float], tuple[int, ...]]:
    """The expected entries, flattened row by row, and the expected shape."""
    rows = [r for r in spec.answer if isinstance(r, list)]
    if rows:
        return [float(v) for r in rows for v in r], (len(rows), len(rows[0]))
    flat = [float(v) for v in spec.answer if not isinstance(v, list)]
    return flat, (len(flat),)


def _format(values: list[list[float]], is_matrix: bool) -> str:
    rows = ["[" + ", ".join(f"{v:.6g}" for v in row) + "]" for row in values]
    return "[" + ", ".join(rows) + "]" if is_matrix else rows[0]


def grade_matrix(submitted: str, spec: MatrixSpec) -> PartResult:
    """Grade a matrix or vector answer elementwise: each entry needs |x-a| <= atol + rtol*|a|.

    Args:
        submitted: the student's raw text in any layout listed in the module docstring.
        spec: the part's MatrixSpec; a flat ``answer`` list means a vector.

    Returns:
        Full credit or none. Feedback may name the expected shape and how many entries are off, never their values;
        ``normalized`` is the parsed matrix, e.g. ``"[[1, 2], [3, 4]]"``.
    """
    rejected = precheck(submitted)
    if rejected is not None:
        return rejected
    expected, expected_shape = _expected(spec)
    try:
        grid, is_matrix = read_grid(submitted)
        values = _values(grid)
    except MatrixSyntaxError as err:
        return wrong(f"expected a matrix or vector of numbers such as [[1, 2], [3, 4]]: {err}")
    except (ExprTooBig, ExprEvalError) as err:
        return wrong(f"could not evaluate an entry: {err}")
    normalized = _format(values, is_matrix)
    flat = _fit(values, is_matrix, expected_shape)
    if flat is None:
        got = (len(values), len(values[0])) if is_matrix else (len(values[0]),)
        return wrong(f"expected {_shape_text(expected_shape)}, got {_shape_text(got)}", normalized)
    off = sum(1 for x, a in zip(flat, expected, strict=True) if not abs(x - a) <= spec.atol + spec.rtol * abs(a))
    if off == 0:
        return right(normalized)
    if not all(math.isfinite(x) for x in flat):
        return wrong("every entry must be a finite number", normalized)
    return wrong(f"{off} of {len(expected)} entries are not right", normalized)
