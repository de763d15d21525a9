"""The table of problem kinds: each kind's model and behaviour (payload, grading, validation, student view).

Ask ``kind_of(problem)`` instead of branching on ``problem.kind``. Adding a problem kind (docs/extending.md,
"Adding a problem kind"): write ``graders/kinds/<kind>.py`` with its model and a ProblemKind subclass, register it
below, and add its tests. Its ``takes`` ("answers" or "code") picks the answer form the set page shows, so no
template changes.
"""

from __future__ import annotations

from graders.kinds.answers import ChoiceKind, FillInKind, ManualKind
from graders.kinds.base import GradeContext, Payload, PayloadInvalid, ProblemKind, ValidateContext
from graders.kinds.code import CodeKind
from graders.model import ProblemBase, register_problem_model

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

PROBLEM_KINDS: dict[str, ProblemKind] = {}


def register_problem_kind(kind: ProblemKind) -> ProblemKind:
    """Add a kind to the table, and its model to the problem-set model so that problemset.yaml can use it."""
    if kind.name in PROBLEM_KINDS:
        raise ValueError(f"problem kind {kind.name!r} is already registered")
    register_problem_model(kind.model)
    PROBLEM_KINDS[kind.name] = kind
    return kind


def kind_of(problem: ProblemBase) -> ProblemKind:
    return PROBLEM_KINDS[problem.kind]


for _kind in (FillInKind(), ChoiceKind(), CodeKind(), ManualKind()):
    register_problem_kind(_kind)
