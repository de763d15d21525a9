"""ProblemKind: what one kind of problem says about itself. The service, the CLI, the pages and the validator ask
the kind instead of branching on ``problem.kind``.

A kind names its model (the pydantic type in problemset.yaml) and says:
- ``takes``: what a submission carries, ``answers`` (part id -> text) or ``code`` (a Python file); it is the
  payload's key and decides which answer form the page shows;
- ``payload``: checks a submission's input and builds the payload that is stored and later graded;
- ``grade``: grades a stored payload;
- ``validate``: what must hold before students see the set (answer cases, the mutant gate) and how many points
  the problem is worth;
- ``view``: the kind's own fields of the student view (never answers, checks, solutions or mutants);
- ``grades_in_process``: grading is plain Python over the payload (no sandbox, milliseconds at most), so the
  service may grade a new submission in the thread that stored it instead of sending it through the queue;
- ``takes_aliases``: its parts are the ``parts`` list of problemset.yaml, so the gradebook may add a students'
  answer to one (an alias, where the part's answer kind takes them too).

``PROBLEM_KINDS`` is the table; each kind's module registers its kinds at its bottom, and importing
``graders.kinds`` imports every module of the package. A kind's model is registered with the problem-set model
where it is defined (``graders/model.py``), so a set loads whether or not this package was imported.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from graders.answers.registry import kind_name
from graders.code.grader import CodeGraderLike
from graders.model import PROBLEM_MODELS, ProblemBase
from graders.problemset.loader import LoadedSet
from graders.problemset.validate import ValidationReport
from graders.problemset.variant_gate import DEFAULT_DRAWS
from graders.problemset.variants import VariantSource
from graders.results import GradeResult

Payload = dict[str, Any]
Takes = Literal["answers", "code"]


class PayloadInvalid(ValueError):
    """A submission's input does not fit its problem; ``field`` names the input that is wrong."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message, self.field = message, field


@dataclass(frozen=True)
class GradeContext:
    """What grading needs besides the payload: the set's folder and a code grader built on first use."""

    root: Path
    code_grader: Callable[[], CodeGraderLike]


@dataclass(frozen=True)
class ValidateContext:
    """What validating one problem needs: the set, where the problem is in the YAML, and the report to fill."""

    loaded: LoadedSet
    where: str
    report: ValidationReport
    code_grader: CodeGraderLike | None
    progress: Callable[[str], None] | None
    max_grading_s: float | None = None  # the service's grading lease: no grading may take longer
    variants: VariantSource | None = None  # runs a problem's generator (the set's jailed checker)
    variant_draws: int = DEFAULT_DRAWS  # how many variants the gate draws


class ProblemKind(ABC):
    model: ClassVar[type[ProblemBase]]
    takes: ClassVar[Takes]
    grades_in_process: ClassVar[bool] = False
    takes_aliases: ClassVar[bool] = False

    @property
    def name(self) -> str:
        return kind_name(self.model)

    @abstractmethod
    def payload(self, problem: Any, *, answers: dict[str, str] | None, code: str | None) -> Payload:
        """The payload to store for this input; raises PayloadInvalid naming the field."""

    @abstractmethod
    def grade(self, problem: Any, payload: Payload, ctx: GradeContext) -> GradeResult:
        """Grade a stored payload. Raises only for internal failures (the caller retries; never scored 0)."""

    @abstractmethod
    def validate(self, problem: Any, ctx: ValidateContext) -> None:
        """Add this problem's points, errors and notes to ``ctx.report``."""

    def view(self, problem: Any) -> dict[str, Any]:
        """The kind's own fields of the student view."""
        return {"parts": []}


PROBLEM_KINDS: dict[str, ProblemKind] = {}


def register_problem_kind(kind: ProblemKind) -> ProblemKind:
    """Add a kind to the table, refusing a name that is taken and a model the problem-set model does not know
    (register it where it is defined, so that loading a set never depends on this package being imported)."""
    if kind.name in PROBLEM_KINDS:
        raise ValueError(f"problem kind {kind.name!r} is already registered")
    if PROBLEM_MODELS.get(kind.name) is not kind.model:
        raise ValueError(
            f"problem kind {kind.name!r}: register {kind.model.__name__} with the problem-set model first "
            "(register_problem_model, in the list at the bottom of graders/model.py)"
        )
    PROBLEM_KINDS[kind.name] = kind
    return kind


def kind_of(problem: ProblemBase) -> ProblemKind:
    return PROBLEM_KINDS[problem.kind]


def rubric_points(problem: ProblemBase) -> float:
    return sum(item.points for item in problem.rubric)
