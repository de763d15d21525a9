"""The table of problem kinds: each kind's behaviour (payload, grading, validation, student view).

Ask ``kind_of(problem)`` instead of branching on ``problem.kind``. Adding a problem kind (docs/extending.md): its
model in ``graders/model.py`` beside the built-in ones, ``graders/kinds/<kind>.py`` with a ProblemKind subclass that
registers itself at the bottom (as ``answers.py`` and ``code.py`` do), and its tests. Importing this package
imports every module in it, so there is no list to edit. Its ``takes`` ("answers" or "code") picks the answer
form the set page shows, so no template changes.
"""

from __future__ import annotations

import importlib
import pkgutil

from graders.kinds.base import (
    PROBLEM_KINDS,
    GradeContext,
    Payload,
    PayloadInvalid,
    ProblemKind,
    ValidateContext,
    kind_of,
    register_problem_kind,
)

__all__ = [
    "PROBLEM_KINDS",
    "GradeContext",
    "Payload",
    "PayloadInvalid",
    "ProblemKind",
    "ValidateContext",
    "kind_of",
    "register_problem_kind",
]

# Every kind module registers its kinds when imported; a module found here is imported before anyone can ask.
for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
