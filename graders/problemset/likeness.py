"""Which mutants of a code problem's gate a graded submission behaves like: the one matcher behind the statistics
page's "students like this mutant" counts and the student's "this looks like a known mistake" hint.

A submission behaves like a mutant when it was graded against the same checks as the gate's matrix (stored with
the version at upload; nothing is re-run) and fails exactly the checks that mutant fails. A mutant that fails no
check outright (it only lost points) resembles nothing: an empty failure set would match every correct submission.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


def gate_checks(gate: dict[str, Any]) -> frozenset[str]:
    """The names of the checks the gate's matrix was made with."""
    return frozenset(str(c["name"]) for c in gate.get("checks", []))


def mutant_failures(gate: dict[str, Any]) -> list[tuple[str, frozenset[str]]]:
    """(mutant file name, the checks it fails) for each mutant of the matrix that fails at least one check."""
    out = []
    for row in gate.get("files", []):
        fails = frozenset(name for name, cell in row.get("checks", {}).items() if not cell.get("passed"))
        if row.get("kind") == "mutant" and fails:
            out.append((str(row["path"]), fails))
    return out


def failure_vector(results: Iterable[tuple[str, bool]], gate: dict[str, Any]) -> frozenset[str] | None:
    """The failed checks of a submission's (check name, passed) results, or None when it ran other checks."""
    results = list(results)
    if frozenset(name for name, _ in results) != gate_checks(gate):
        return None
    return frozenset(name for name, passed in results if not passed)


def behaves_like(gate: dict[str, Any], failed: frozenset[str] | None) -> list[str]:
    """The mutants (file names) whose failures are exactly ``failed``; none for a correct or foreign submission."""
    if not failed:
        return []
    return [path for path, fails in mutant_failures(gate) if fails == failed]
