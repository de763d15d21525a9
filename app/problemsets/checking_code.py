"""The version of the code that checks a set, the second half of the key a stored gate report is kept under.

A version's gate report (its validation_report) says the set passed the gate as this code judged it. When the
grading engine or the check library changes (an upgrade), the same content may be judged differently, so each
stored version records the checking code it passed with (``ProblemSetVersion.checked_with``), and `serve` checks
again, in the background, every live version whose key is not the current one (app.problemsets.set_loader).
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import graders
from graders.model import ProblemSetSpec

_GRADERS = Path(graders.__file__).resolve().parent
# The check libraries the code sets compose their checks from (checklibs/, installed beside graders/). Found by
# path, never imported: the service runs no check library's code (import-linter contract
# graders-never-import-checklibs).
_CHECKLIBS = _GRADERS.parent / "checklibs"
# What the gate of a set without code problems depends on: the answer kinds and their checks (graders/answers),
# the problem kinds that run each part of the validation (graders/kinds), the loader and the validation itself
# (graders/problemset), and the top-level modules they share (graders/grade.py, model.py, results.py, ...).
ANSWER_PARTS = ("answers", "kinds", "problemset")
# A set with code problems depends also on the code grader (graders/code), the sandbox that runs solutions and
# mutants, and the check libraries of checklibs/ (the attention checks the shipped sets compose theirs from).
CODE_PARTS = (*ANSWER_PARTS, "code", "sandbox")


@functools.cache
def checking_code_version(*, code: bool) -> str:
    """A hash over the source files that a gate's verdict depends on, computed once per process.

    Covers every ``*.py`` directly in graders/ and, recursively, in the subpackages ANSWER_PARTS (a set without
    code problems) or CODE_PARTS and all of checklibs/ (a set with one). Each file counts by its path (relative to
    graders/, or under ``checklibs/``) and its bytes, so a moved, added, removed or edited file changes it, and a
    bytecode cache or a checkout's location does not. A set is checked again only when the part it depends on
    changed: an edit of the sandbox or of a check library leaves a fill-in set's report current.
    """
    if not code:
        return tree_version(_GRADERS, ANSWER_PARTS)
    return tree_version(_GRADERS, CODE_PARTS, libraries=_CHECKLIBS)


def tree_version(root: Path, parts: tuple[str, ...], *, libraries: Path | None = None) -> str:
    """The hash of the ``*.py`` files directly in ``root`` and under each of its subfolders ``parts``, then of all
    those under ``libraries`` (each named ``checklibs/<its path there>``)."""
    digest = hashlib.sha256(b"checking-code-v1\0")
    files = sorted(root.glob("*.py"))
    for part in parts:
        files += sorted((root / part).rglob("*.py"))
    named = [(path.relative_to(root).as_posix(), path) for path in files]
    if libraries is not None:
        named += [(f"checklibs/{p.relative_to(libraries).as_posix()}", p) for p in sorted(libraries.rglob("*.py"))]
    for name, path in named:
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def version_for(spec: ProblemSetSpec) -> str:
    """The checking-code version a set's gate depends on (the module attribute is read on every call, so a test
    can stand in another version by replacing ``checking_code_version``)."""
    return checking_code_version(code=any(p.instructor_code() is not None for p in spec.problems))
