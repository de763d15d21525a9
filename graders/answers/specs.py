"""The answer-part specifications a problem set's YAML can declare, one pydantic model per matcher kind.

Each part of a fill-in problem is one of these (discriminated by ``kind``, looked up in ``registry.ANSWER_KINDS``).
Graders in this package are pure functions ``(submitted: str, spec) -> PartResult``.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from graders.answers.expr_errors import ExprError
from graders.answers.safe_expr import parse_expression


class AnswerSpec(BaseModel):
    """What every answer part declares; each kind's spec adds ``kind: Literal[...]`` and its own fields."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: str  # each kind narrows it to its Literal name
    points: float = Field(default=1.0, ge=0)
    # Realistic answers the part must accept / reject; validated when the set is loaded (the fill-in "mutant gate").
    accept: list[str] = Field(default_factory=list)
    reject: list[str] = Field(default_factory=list)
    # Shown to the student only after grading when the set allows explanations.
    explanation: str | None = None


class ValueSpec(AnswerSpec):
    """A part whose answer is a value (number, matrix, shape, size, formula): students may write ``name = value``."""

    names: list[str] = Field(
        default_factory=list,
        description="what the blank asks for, as a student may name it left of '=' (d/H, d_head); empty: any name",
    )


class TextSpec(AnswerSpec):
    kind: Literal["text"]
    answers: list[str] = Field(default_factory=list, description="accepted aliases, compared after normalisation")
    case_sensitive: bool = False
    regex: str | None = Field(default=None, description="a full-match regex that also accepts")
    keywords: list[str] | None = Field(default=None, description="accept when the answer contains all of these")

    @field_validator("regex")
    @classmethod
    def _regex_compiles(cls, regex: str | None) -> str | None:
        # Refused when the set is loaded, not when the first student's answer reaches text._compiled.
        if regex is not None:
            try:
                re.compile(regex)
            except re.error as err:
                raise ValueError(f"regex {regex!r} is not a valid regular expression: {err}") from err
        return regex

    @model_validator(mode="after")
    def _something_accepts(self) -> TextSpec:
        if not (self.answers or self.regex or self.keywords):
            raise ValueError("a text part needs answers, regex or keywords")
        return self


class ChoiceSpec(AnswerSpec):
    kind: Literal["choice"]
    options: list[str] = Field(min_length=2, description="option labels, e.g. [A, B, C, D]")
    answer: list[str] = Field(min_length=1, description="the correct labels")
    multi: bool = False
    scheme: Literal["all_or_nothing", "per_option"] = "all_or_nothing"
    penalty: float = Field(default=1.0, ge=0, description="per_option: credit lost per wrong option picked")

    @model_validator(mode="after")
    def _answer_in_options(self) -> ChoiceSpec:
        unknown = [a for a in self.answer if a not in self.options]
        if unknown:
            raise ValueError(f"answer {unknown} not among options {self.options}")
        if not self.multi and len(self.answer) != 1:
            raise ValueError("a single-choice part has exactly one answer")
        return self


class NumericSpec(ValueSpec):
    kind: Literal["numeric"]
    answer: float
    rtol: float = Field(default=1e-3, ge=0)
    atol: float = Field(default=0.0, ge=0)
    sig_figs: int | None = Field(default=None, ge=1, description="compare to this many significant figures")


class MatrixSpec(ValueSpec):
    kind: Literal["matrix"]
    answer: list[list[float]] | list[float]
    rtol: float = Field(default=1e-3, ge=0)
    atol: float = Field(default=1e-4, ge=0)


class ShapeSpec(ValueSpec):
    kind: Literal["shape"]
    answer: list[int] = Field(min_length=1)


class SizeSpec(ValueSpec):
    kind: Literal["size"]
    answer_bytes: int = Field(ge=0)
    rtol: float = Field(default=0.0, ge=0)


class SymbolicSpec(ValueSpec):
    kind: Literal["symbolic"]
    answer: str = Field(description="the expected expression, plain or LaTeX, e.g. sqrt(d_k)")
    symbols: list[str] = Field(default_factory=list, description="variable names students may use, e.g. [d_k]")

    @model_validator(mode="after")
    def _answer_parses(self) -> SymbolicSpec:
        # The grader parses the answer the same way; a broken one is refused at load, not at the first submission.
        try:
            parse_expression(self.answer, self.symbols)
        except ExprError as err:
            raise ValueError(
                f"answer {self.answer!r} is not a valid expression with symbols {self.symbols}: {err}"
            ) from err
        return self


class IdentifierSpec(AnswerSpec):
    kind: Literal["identifier"]
    answer: str
    accept_call_forms: bool = Field(default=False, description="also accept generate() and model.generate")


class EssaySpec(AnswerSpec):
    """Free text scored by an instructor against the problem's rubric; auto score 0."""

    kind: Literal["essay"]
    points: float = 0.0
