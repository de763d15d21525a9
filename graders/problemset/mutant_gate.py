"""The mutant gate: every reference solution must get full marks and every known-wrong mutant must lose points.

A mutant may declare which check category should catch it with a comment line ``# caught-by: masking`` (several
comma-separated categories allowed); the gate then also requires that it lost points in a check of one of those
categories, so a check that silently stops testing its property is noticed even if another check still fails.
The result is a matrix files × checks, for the API (``to_dict``) and for ``autograder problems validate``.

Timing verdicts are measured, so the gate does not trust one grading of them (``confirm_timing``): a solution that
lost points only in timing checks is graded once more before it is refused (a note says so when it then scored full
marks). A mutant declared ``caught-by: timing`` that kept its timing points is re-measured (graded once more); when
it keeps them again, its timing loss is "not reproduced under this load": a warning for the instructor, never a
reason to refuse the set, provided the mutant's other declared categories, if any, caught it. Machine load must
not take a set whose solutions score full marks and whose other mutants are caught away from the students.
"""

from __future__ import annotations

import functools
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from graders.code.checks import CheckSpec
from graders.code.grader import CodeGraderLike
from graders.model import CodeProblem
from graders.results import CATEGORIES, Verdict

_CAUGHT_BY = re.compile(r"^#\s*caught-by:\s*(.+?)\s*$", re.MULTILINE)
TIMING = "timing"  # the check category whose verdicts are measured, not computed
FileKind = Literal["solution", "mutant"]


@dataclass(frozen=True)
class Cell:
    """One check's result for one file."""

    passed: bool
    score: float
    max_score: float


@dataclass
class FileRow:
    """One graded solution or mutant: its total, verdict and per-check cells."""

    kind: FileKind
    path: str
    score: float
    max_score: float
    verdict: str
    cells: dict[str, Cell]
    expected: list[str] = field(default_factory=list)
    seconds: float = 0.0
    message: str = ""
    notes: list[str] = field(default_factory=list)
    timing_lost: tuple[bool, ...] = ()  # a timing mutant: whether it lost timing points, per grading

    @property
    def full_marks(self) -> bool:
        return self.max_score > 0 and self.score >= self.max_score - 1e-9

    def lost_in(self, categories: dict[str, str]) -> list[str]:
        """Categories of the checks in which this file lost points."""
        return sorted({categories[name] for name, c in self.cells.items() if c.score < c.max_score - 1e-9})

    def to_dict(self, categories: dict[str, str]) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "score": self.score,
            "max_score": self.max_score,
            "verdict": self.verdict,
            "message": self.message,
            "expected_categories": self.expected,
            "lost_in_categories": self.lost_in(categories),
            "seconds": round(self.seconds, 3),
            "notes": self.notes,
            "checks": {name: vars(cell) for name, cell in self.cells.items()},
        }


@dataclass
class GateReport:
    """The matrix of a problem's solutions and mutants against its checks, and what is wrong with it."""

    problem_id: str
    checks: list[CheckSpec]
    rows: list[FileRow] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # for the instructor; they never refuse the set

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def categories(self) -> dict[str, str]:
        return {c.name: c.category for c in self.checks}

    def to_dict(self) -> dict[str, Any]:
        return {
            "problem": self.problem_id,
            "ok": self.ok,
            "problems": self.problems,
            "warnings": self.warnings,
            "checks": [{"name": c.name, "category": c.category, "points": c.points} for c in self.checks],
            "files": [row.to_dict(self.categories) for row in self.rows],
        }

    def render_text(self) -> str:
        """The matrix as an aligned table: rows = files, columns = checks, cells ✓/✗ with the score."""
        return render_table(self)


def expected_categories(source: str) -> list[str]:
    """The categories a mutant declares with ``# caught-by: a, b`` lines."""
    found: list[str] = []
    for match in _CAUGHT_BY.finditer(source):
        found += [c.strip() for c in match.group(1).split(",") if c.strip()]
    return found


def grade_file(
    grader: CodeGraderLike, problem: CodeProblem, checks: list[CheckSpec], path: Path, kind: FileKind
) -> FileRow:
    source = path.read_text(encoding="utf-8")
    start = time.perf_counter()
    result = grader.grade(source=source, problem=problem, checks=checks)
    cells = {c.name: Cell(c.passed, c.score, c.max_score) for c in result.checks}
    expected = expected_categories(source) if kind == "mutant" else []
    row = FileRow(kind, path.name, result.score, result.max_score, str(result.verdict), cells, expected)
    row.seconds, row.message = time.perf_counter() - start, result.message
    return row


def confirm_timing(row: FileRow, regrade: Callable[[], FileRow], categories: dict[str, str]) -> FileRow:
    """Grade again where one timing verdict would decide: see the module docstring. Returns the row to judge."""
    if row.kind == "solution":
        if set(row.lost_in(categories)) != {TIMING}:
            return row
        again = regrade()
        again.notes.append(
            f"lost timing points in a first grading ({row.score:g}/{row.max_score:g}), re-graded: "
            f"{again.score:g}/{again.max_score:g}" + (" (timing verdict unstable)" if again.full_marks else "")
        )
        return again
    if TIMING not in row.expected:
        return row
    if TIMING in row.lost_in(categories):
        row.timing_lost = (True,)
        return row
    again = regrade()  # re-measured: one grading that kept its timing points does not decide
    again.timing_lost = (False, TIMING in again.lost_in(categories))
    if again.timing_lost[1]:
        again.notes.append(
            f"kept its timing points in a first grading ({row.score:g}/{row.max_score:g}), lost them when "
            f"re-measured ({again.score:g}/{again.max_score:g})"
        )
    return again


def timing_not_reproduced(row: FileRow) -> bool:
    """A timing mutant that kept its timing points in both gradings (``confirm_timing``)."""
    return row.kind == "mutant" and len(row.timing_lost) == 2 and not any(row.timing_lost)


def row_warnings(row: FileRow, where: str, categories: dict[str, str]) -> list[str]:
    """What the instructor should know about this row without the set being refused."""
    if not timing_not_reproduced(row) or row.verdict == Verdict.INTERNAL_ERROR:
        return []
    lost = row.lost_in(categories)
    return [
        f"{where}: timing loss not reproduced under this load: the mutant declares caught-by timing but kept its "
        f"timing points in 2 of 2 gradings (lost points in {', '.join(lost) or 'no check'}); the set is not refused "
        "for it. Re-run `autograder problems validate` on a quiet machine to check the timing check's margin."
    ]


def row_problems(row: FileRow, where: str, categories: dict[str, str], total: float) -> list[str]:
    """Why this row breaks the gate (empty when it is fine)."""
    if row.verdict == Verdict.INTERNAL_ERROR:
        return [f"{where}: the grader failed (internal error), so the file could not be judged"]
    if row.kind == "solution":
        if row.full_marks and row.max_score >= total - 1e-9:
            return []
        failed = [name for name, c in row.cells.items() if not c.passed]
        verdict = f"; {row.verdict}: {row.message}" if row.message else ""
        return [
            f"{where}: reference solution scored {row.score:g}/{total:g} (failed: {', '.join(failed) or '-'}{verdict})"
        ]
    expected = row.expected
    if timing_not_reproduced(row):  # a warning (row_warnings); only the other declared categories can refuse
        expected = [c for c in expected if c != TIMING]
        if not expected:
            return []
    if row.full_marks:
        return [f"{where}: mutant not caught: it scored full marks ({row.score:g}/{row.max_score:g})"]
    unknown = [c for c in row.expected if c not in CATEGORIES]
    if unknown:
        return [f"{where}: unknown caught-by categories {unknown}; expected some of {sorted(CATEGORIES)}"]
    lost = row.lost_in(categories)
    if expected and not set(expected) & set(lost):
        return [
            f"{where}: mutant declares caught-by {', '.join(row.expected)} but lost points only in "
            f"{', '.join(lost) or 'no check'}"
        ]
    return []


def _short(name: str, width: int = 9) -> str:
    if len(name) <= width:
        return name
    parts = name.split("_")
    if len(parts) > 1:
        return "_".join(p[:4] for p in parts)[:width]
    return name[: width - 1] + "…"


def _short_names(names: list[str]) -> list[str]:
    """Column headers: short, and unique (a clash gets a number, e.g. two "loop_matc" columns)."""
    heads: list[str] = []
    for name in names:
        head = _short(name)
        if head in heads:
            head = f"{head[:7]}{len(heads) + 1}"
        heads.append(head)
    return heads


def _cell(cell: Cell | None) -> str:
    if cell is None:
        return "-"
    return f"{'✓' if cell.passed else '✗'} {cell.score:g}"


def render_table(report: GateReport) -> str:
    names = [c.name for c in report.checks]
    heads = _short_names(names)
    widths = [max(len(h), 6) for h in heads]
    file_w = max([len(r.path) + 2 for r in report.rows] + [6])
    lines = [
        f"{report.problem_id}: {'OK' if report.ok else 'FAILED'} "
        f"({sum(r.kind == 'solution' for r in report.rows)} solutions, {sum(r.kind == 'mutant' for r in report.rows)} "
        "mutants; S = solution must score full marks, M = mutant must lose points)",
        f"{'file':<{file_w}}  {'score':>11}  "
        + "  ".join(f"{h:<{w}}" for h, w in zip(heads, widths, strict=True))
        + "  expected to be caught by",
    ]
    for row in report.rows:
        cells = "  ".join(f"{_cell(row.cells.get(n)):<{w}}" for n, w in zip(names, widths, strict=True))
        total = f"{row.score:g}/{row.max_score:g}"
        tag = "S" if row.kind == "solution" else "M"
        lines.append(f"{tag} {row.path:<{file_w - 2}}  {total:>11}  {cells}  {', '.join(row.expected)}".rstrip())
    legend = ", ".join(
        f"{head} = {c.name} ({c.category}, {c.points:g} pt)" for head, c in zip(heads, report.checks, strict=True)
    )
    lines.append(f"columns: {legend}")
    lines += [f"note: {row.path}: {note}" for row in report.rows for note in row.notes]
    lines += [f"warning: {w}" for w in report.warnings]
    lines += [f"problem: {p}" for p in report.problems]
    return "\n".join(lines)


def _files(set_root: Path, folder: str) -> list[Path]:
    return sorted((set_root / folder).glob("*.py")) if (set_root / folder).is_dir() else []


def run_mutant_gate(
    problem: CodeProblem, set_root: Path, grader: CodeGraderLike, progress: Callable[[str], None] | None = None
) -> GateReport:
    """Grade every file in the problem's solutions and mutants folders and judge the matrix.

    Args:
        problem: the code problem (its checks file, solutions_dir() and mutants_dir()).
        set_root: the folder holding problemset.yaml.
        grader: anything with ``.checks(root, relative)`` and ``.grade(source=, problem=, checks=)`` (the sandboxed
            CodeGrader in production, which imports and runs the set's code in its jailed checker only).
        progress: called with one line per graded file, for long validations.

    Returns:
        The GateReport; ``ok`` when every solution has full marks and every mutant lost points as declared.
    """
    checks = grader.checks(set_root, problem.checks)  # imported in the set's jailed checker
    report = GateReport(problem.id, checks)
    total = sum(c.points for c in checks)
    folders: list[tuple[FileKind, str]] = [("solution", problem.solutions_dir()), ("mutant", problem.mutants_dir())]
    for kind, folder in folders:
        files = _files(set_root, folder)
        if kind == "solution" and not files:
            report.problems.append(f"{folder}: no reference solution (*.py); at least one must score full marks")
        for path in files:
            row = grade_file(grader, problem, checks, path, kind)
            regrade = functools.partial(grade_file, grader, problem, checks, path, kind)
            row = confirm_timing(row, regrade, report.categories)
            report.rows.append(row)
            if progress is not None:
                progress(f"{problem.id}: {kind} {path.name}: {row.score:g}/{total:g}")
            report.problems += row_problems(row, f"{folder}/{path.name}", report.categories, total)
            report.warnings += row_warnings(row, f"{folder}/{path.name}", report.categories)
    return report
