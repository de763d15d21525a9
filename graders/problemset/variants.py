"""Problem variants: what a problem's generator returns for a seed, read as plain data, and the problem it makes.

A problem that declares ``parameters`` and a ``generator`` (a file of the set defining ``generate(seed)``) gets its
numbers per student. The generator is instructor code: it runs only in the set's jailed checker (a
``VariantSource``, ``graders.code.checker.pool.CheckerPool``), and what it returns crosses as JSON and is
validated here, never evaluated: ``{"params": {name: value}, "parts": {part id: {field: value}}}``, where each
part's fields replace those of the part in problemset.yaml (its answer, tolerance; never its kind or points).

The prompt names a parameter as ``{%name%}``: a ``%`` starts a comment in TeX, so the marker cannot be part of a
KaTeX formula, and Markdown gives it no meaning either.
"""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, Protocol

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictFloat, StrictInt, ValidationError

from graders.code.grader import VariantFailed
from graders.model import PARAMETER_PATTERN, ProblemBase

__all__ = ["Variant", "VariantFailed", "VariantInvalid", "VariantSource"]

MARKER = re.compile(r"\{%\s*(" + PARAMETER_PATTERN + r")\s*%\}")
# Fields a variant may not change: a part's kind and points are the same for every student, and its accept/reject
# examples are the instructor's (checked against problemset.yaml's own numbers, or per variant where they name
# parameters: graders/problemset/variant_gate.py).
FIXED_FIELDS = frozenset({"kind", "points", "accept", "reject"})


class VariantSource(Protocol):
    """Where a generator runs: the set's jailed checker (``CheckerPool.variant``)."""

    def variant(self, root: Any, relative: str, seed: int) -> Any:
        """What ``generate(seed)`` of ``root/relative`` returned, as JSON data. Raises VariantFailed."""
        ...


class VariantInvalid(ValueError):
    """What the generator returned does not fit its problem (names, parts, a part's own validation)."""


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("a parameter must be a finite number")
    return value


Number = StrictInt | Annotated[StrictFloat, AfterValidator(_finite)]
Scalar = Number | Annotated[str, Field(max_length=200)]
Value = Scalar | Annotated[list[Number], Field(max_length=64)] | Annotated[list[list[Number]], Field(max_length=16)]


class Variant(BaseModel):
    """One variant of a problem, as validated from the generator's answer (plain data only)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    params: dict[str, Value] = Field(max_length=50)
    parts: dict[str, dict[str, Any]] = Field(default_factory=dict, max_length=50)


def prompt_names(text: str) -> set[str]:
    """The parameter names a prompt uses."""
    return set(MARKER.findall(text))


def format_value(value: Any) -> str:
    """A parameter as the prompt shows it: ``8``, ``0.5``, ``[1, 2]``, ``[[1, 0], [0, 1]]``."""
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value) if isinstance(value, float) else str(value)


def render_prompt(text: str, variant: Variant | None) -> str:
    """The prompt with each ``{%name%}`` replaced by the variant's value (unchanged without a variant)."""
    if variant is None:
        return text
    return MARKER.sub(lambda m: format_value(variant.params.get(m.group(1), m.group(0))), text)


def parse_variant(raw: Any, problem: ProblemBase) -> Variant:
    """Validate a generator's answer against its problem. Raises VariantInvalid saying what is wrong."""
    try:
        variant = Variant.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise VariantInvalid(f"generate() returned {where or 'a value'} that is not allowed: {first['msg']}") from None
    if set(variant.params) != set(problem.parameters):
        raise VariantInvalid(
            f"generate() must return params {sorted(problem.parameters)}, got {sorted(variant.params)}"
        )
    unknown = sorted(set(variant.parts) - set(problem.part_ids()))
    if unknown:
        raise VariantInvalid(f"generate() returned parts {unknown}; this problem has {problem.part_ids()}")
    apply_variant(problem, variant)  # every part it changes must still be a valid part
    return variant


def apply_variant(problem: ProblemBase, variant: Variant | None) -> ProblemBase:
    """The problem as the variant's student sees and is graded on: its parts with the variant's fields."""
    if variant is None or not variant.parts:
        return problem
    parts = list(problem.answer_parts())
    for index, part_id in enumerate(problem.part_ids()):
        fields = variant.parts.get(part_id)
        if not fields:
            continue
        fixed = sorted(FIXED_FIELDS & set(fields))
        if fixed:
            raise VariantInvalid(f"{part_id}: a variant may not change {fixed}")
        try:
            parts[index] = type(parts[index]).model_validate(parts[index].model_dump() | fields)
        except ValidationError as exc:
            raise VariantInvalid(f"{part_id}: {exc.errors()[0]['msg']}") from None
    return problem.model_copy(update={"parts": parts})
