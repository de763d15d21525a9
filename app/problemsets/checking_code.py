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
# What the gate of a set without code problems depends on: the answer kinds and their checks (graders/answers),
# the problem kinds that run each part of the validation (graders/kinds), the loader and the validation itself
# (graders/problemset), and the top-level modules they share (graders/grade.py, model.py, results.py, ...).
ANSWER_PARTS = ("answers", "kinds", "problemset")
# A set with code problems depends also on the code grader and its check library (graders/code, with the
# attention checks the shipped sets compose theirs from) and on the sandbox that runs solutions and mutants.
CODE_PARTS = (*ANSWER_PARTS, "code", "sandbox")


@functools.cache
def checking_code_version(*, code: bool) -> str:
    """A hash over the source files of graders/ that a gate's verdict depends on, computed once per process.

    Covers every ``*.py`` directly in graders/ and, recursively, in the subpackages ANSWER_PARTS (a set without
    code problems) or CODE_PARTS (a set with one). Each file counts by its path relative to graders/ and its
    bytes, so a moved, added, removed or edited file changes it, and a bytecode cache or a checkout's location
    does not. A set is checked again only when the part it depends on changed: an edit of the sandbox leaves a
    fill-in set's report current.
    """
    return tree_version(_GRADERS, CODE_PARTS if code else ANSWER_PARTS)


def tree_version(root: Path, parts: tuple[str, ...]) -> str:
    """The hash of the ``*.py`` files directly in ``root`` and under each of its subfolders ``parts``."""
    digest = hashlib.sha256(b"checking-code-v1\0")
    files = sorted(root.glob("*.py"))
    for part in parts:
        files += sorted((root / part).rglob("*.py"))
    for path in files:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def version_for(spec: ProblemSetSpec) -> str:
    """The checking-code version a set's gate depends on (the module attribute is read on every call, so a test
    can stand in another version by replacing ``checking_code_version``)."""
    return checking_code_version(code=any(p.instructor_code() is not None for p in spec.problems))
