"""The table of answer kinds: for each kind of blank, its spec model, its grader and how a student sees it.

A kind's name is read off its spec's ``kind: Literal[...]`` field, so the list of kinds is never written out by
hand. Everything that needs "which answer kinds exist" (the problem-set parser, the validator, the student view,
the answer form's hints) asks this table.

Adding an answer kind (docs/extending.md, "Adding an answer kind"): write ``graders/answers/<kind>.py`` with its
spec (a subclass of ``AnswerSpec``) and its grader, register it at the bottom of this file, and add its tests.
"""

from __future__ import annotations

import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import BaseModel, PlainValidator, SerializeAsAny
from pydantic_core import PydanticCustomError

from graders.answers.choice import grade_choice
from graders.answers.essay import grade_essay
from graders.answers.identifier import grade_identifier
from graders.answers.matrix import grade_matrix
from graders.answers.numeric import grade_numeric, numeric_format_error
from graders.answers.preview import (
    Preview,
    preview_matrix,
    preview_numeric,
    preview_shape,
    preview_size,
    preview_symbolic,
)
from graders.answers.shape import grade_shape, shape_format_error
from graders.answers.size import grade_size, size_format_error
from graders.answers.specs import (
    AnswerSpec,
    ChoiceSpec,
    EssaySpec,
    IdentifierSpec,
    MatrixSpec,
    NumericSpec,
    ShapeSpec,
    SizeSpec,
    SymbolicSpec,
    TextSpec,
)
from graders.answers.symbolic import grade_symbolic, symbolic_format_error, symbolic_normal_form
from graders.answers.text import grade_text
from graders.results import PartResult
from graders.words import N_

# How the answer form shows a blank: a one-line input, a box for a matrix, a long text box, or option buttons.
Widget = Literal["line", "matrix", "essay", "options"]


@dataclass(frozen=True)
class AnswerKind:
    """One kind of blank.

    Attributes:
        spec: the pydantic model of the part in problemset.yaml; its ``kind`` literal names the kind.
        grade: the pure grader ``(submitted, spec) -> PartResult``.
        hint: the format hint shown next to the blank, or a function of the spec giving it.
        widget: how the answer form shows the blank.
        auto: False for kinds scored by hand (essays): stored, scored 0 automatically, awaiting a rubric grade.
        view: extra fields of the student view for a part of this kind (never the answer).
        format_error: why a text cannot be read as this kind at all (``sqrt(d_k``, a shape with a letter), or
            None; such an answer is refused before it is stored and does not use an attempt. None: every text
            is an answer (text, choice, essay).
        preview: how the form shows what was typed before it is submitted (parsed, never compared with the answer);
            None for kinds whose text is shown as typed.
        key: the reference answer as a released answer key shows it, or None where a spec has no single one (a
            text part with only a regex); None (the default): the spec's ``answer`` field, written out. A kind
            scored automatically whose spec has no ``answer`` field must give one (registration refuses it).
        aliases: the spec's list of accepted answers that the gradebook may add a students' answer to (an
            "alias", e.g. ``answers`` of a text part), or None where accepting one more text makes no sense.
        normal_form: how the gradebook groups students' wrong answers (" Encoder。" and "encoder" together);
            None (the default): the grader's own reading (its result's ``normalized``).
        pure: grading is plain, quick Python: the gradebook may grade a shown answer against the current version
            to say whether it is accepted now. False for a kind whose grading may wait on a worker (symbolic).
    """

    spec: type[AnswerSpec]
    grade: Callable[[str, Any], PartResult]
    hint: str | Callable[[Any], str]
    widget: Widget = "line"
    auto: bool = True
    view: Callable[[Any], dict[str, Any]] = field(default=lambda spec: {})
    format_error: Callable[[str, Any], str | None] | None = None
    preview: Callable[[str, Any], Preview] | None = None
    key: Callable[[Any], str | None] | None = None
    aliases: str | None = None
    normal_form: Callable[[str, Any], str | None] | None = None
    pure: bool = True

    @property
    def name(self) -> str:
        return kind_name(self.spec)

    @property
    def takes_aliases(self) -> bool:
        return self.aliases is not None

    def hint_for(self, spec: AnswerSpec) -> str:
        return self.hint(spec) if callable(self.hint) else self.hint

    def released_key(self, spec: AnswerSpec) -> str | None:
        """The reference answer a released answer key shows for this part; None for parts scored by hand."""
        if not self.auto:
            return None
        if self.key is not None:
            return self.key(spec)
        return answer_text(getattr(spec, "answer"))  # noqa: B009 - registration checked that the spec has it

    def normalized(self, submitted: str, spec: AnswerSpec) -> str | None:
        """The answer as this kind reads it before comparing, for grouping students' answers (see normal_form)."""
        if self.normal_form is not None:
            return self.normal_form(submitted, spec)
        return self.grade(submitted, spec).normalized


def answer_text(value: Any) -> str:
    """A spec's answer as text: labels joined (``A, C``), a float in full without trailing zeros (1048576, not
    the 1.04858e+06 that an exact part would refuse), anything else as str."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)


ANSWER_KINDS: dict[str, AnswerKind] = {}


def kind_name(spec: type[BaseModel]) -> str:
    """The literal of a model's ``kind`` field: ``TextSpec`` -> ``"text"``, ``CodeProblem`` -> ``"code"``."""
    annotation = spec.model_fields["kind"].annotation
    names = typing.get_args(annotation)
    if typing.get_origin(annotation) is not Literal or len(names) != 1:
        raise TypeError(f"{spec.__name__}.kind must be a Literal of one name, e.g. kind: Literal['text']")
    return str(names[0])


def register_answer_kind(kind: AnswerKind) -> AnswerKind:
    """Add a kind to the table (refusing a name that is taken, and a kind that cannot say its answer key); returns
    it."""
    if kind.name in ANSWER_KINDS:
        raise ValueError(f"answer kind {kind.name!r} is already registered")
    fields = kind.spec.model_fields
    if kind.auto and kind.key is None and "answer" not in fields:
        raise ValueError(
            f"answer kind {kind.name!r}: {kind.spec.__name__} has no 'answer' field, so give AnswerKind a key "
            "(the reference answer a released answer key shows)"
        )
    if kind.aliases is not None and kind.aliases not in fields:
        raise ValueError(f"answer kind {kind.name!r}: aliases names {kind.aliases!r}, not a field of its spec")
    ANSWER_KINDS[kind.name] = kind
    return kind


def answer_kind(name: str) -> AnswerKind:
    return ANSWER_KINDS[name]


def grade_part(submitted: str, spec: AnswerSpec) -> PartResult:
    """Grade one answer part with the grader its kind registered.

    Args:
        submitted: the student's raw text.
        spec: the part's specification from the problem set.

    Returns:
        The part's result; never raises for bad student input.
    """
    return ANSWER_KINDS[kind_name(type(spec))].grade(submitted, spec)


def normalized_answer(submitted: str, spec: AnswerSpec) -> str | None:
    """The answer as the part's grader reads it before comparing (its result's ``normalized``: "encoder" for
    " Encoder。", "32" for "2^5"), for grouping students' answers; None where the grader reads nothing. A symbolic
    part is parsed only, never sent to the SymPy worker (its kind's ``normal_form``)."""
    return ANSWER_KINDS[kind_name(type(spec))].normalized(submitted, spec)


def table_union(table: Mapping[str, type[BaseModel]], noun: str) -> Any:
    """A pydantic type that validates a mapping with the model its ``kind`` names in ``table``.

    The union is looked up at validation time, so a kind registered later is known too, and pydantic keeps the
    location of errors raised inside the model (``parts[0].answer``). SerializeAsAny dumps each value with its own
    model's fields, not only the base class's.
    """

    def validate(value: Any) -> BaseModel:
        if isinstance(value, BaseModel):
            return value
        if not isinstance(value, dict):
            raise PydanticCustomError("kind_type", "expected a mapping with a kind")
        kind = value.get("kind")
        if not isinstance(kind, str) or kind not in table:
            raise PydanticCustomError(
                "kind_unknown",
                "unknown {noun} kind '{kind}'; expected one of {kinds}",
                {"noun": noun, "kind": str(kind), "kinds": ", ".join(sorted(table))},
            )
        return table[kind].model_validate(value)

    return PlainValidator(validate)


class _AnswerSpecTable(Mapping[str, type[BaseModel]]):
    """ANSWER_KINDS seen as kind -> spec model, for table_union."""

    def __getitem__(self, name: str) -> type[BaseModel]:
        return ANSWER_KINDS[name].spec

    def __iter__(self) -> Iterator[str]:
        return iter(ANSWER_KINDS)

    def __len__(self) -> int:
        return len(ANSWER_KINDS)


# The type of a fill-in problem's parts in the problem-set model.
PartSpec = Annotated[SerializeAsAny[AnswerSpec], table_union(_AnswerSpecTable(), "answer")]


def _choice_hint(spec: ChoiceSpec) -> str:
    return N_("choose all that apply") if spec.multi else N_("choose one")


def _text_key(spec: TextSpec) -> str | None:
    return spec.answers[0] if spec.answers else None  # a part that accepts by regex or keywords alone has none


def _size_key(spec: SizeSpec) -> str:
    return str(spec.answer_bytes)


# Format hints are marked with N_: the pages show them in the viewer's language (app.web.blanks).
# Format hints show the form a blank accepts with neutral values: never a shipped answer (a shared example such as
# sqrt(d_k) *is* one blank's answer) and never a form the grader refuses (letters in a shape, MB where MiB is meant).
for _kind in (
    AnswerKind(TextSpec, grade_text, N_("word or phrase"), key=_text_key, aliases="answers"),
    AnswerKind(
        ChoiceSpec,
        grade_choice,
        _choice_hint,
        widget="options",
        view=lambda spec: {"options": spec.options, "multi": spec.multi},
    ),
    AnswerKind(
        NumericSpec,
        grade_numeric,
        N_("number, e.g. 0.75 or 3^4"),
        preview=preview_numeric,
        format_error=numeric_format_error,
    ),
    AnswerKind(MatrixSpec, grade_matrix, N_("matrix, e.g. [[1, 2], [3, 4]]"), widget="matrix", preview=preview_matrix),
    AnswerKind(
        ShapeSpec,
        grade_shape,
        N_("shape in numbers, e.g. 2×3×4 or (2, 3, 4)"),
        preview=preview_shape,
        format_error=shape_format_error,
    ),
    AnswerKind(
        SizeSpec,
        grade_size,
        N_("size with its unit, e.g. 1.5 KiB or 512 B"),
        preview=preview_size,
        format_error=size_format_error,
        key=_size_key,
    ),
    AnswerKind(
        SymbolicSpec,
        grade_symbolic,
        N_("formula, e.g. a*b^2 or \\frac{a}{2}"),
        preview=preview_symbolic,
        format_error=symbolic_format_error,
        normal_form=symbolic_normal_form,
        pure=False,
    ),
    AnswerKind(IdentifierSpec, grade_identifier, N_("name")),
    AnswerKind(EssaySpec, grade_essay, N_("written answer"), widget="essay", auto=False),
):
    register_answer_kind(_kind)
