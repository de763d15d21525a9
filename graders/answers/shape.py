"""Tensor-shape answers such as ``8×8×128×32``, ``(8, 8, 128, 32)`` or ``torch.Size([8, 8, 128, 32])``."""

from __future__ import annotations

import re

from graders.answers.equation import Equation, last_side, read_equation
from graders.answers.normalize import fold_width, precheck, quote, right, strip_trailing_punct, wrong
from graders.answers.specs import ShapeSpec
from graders.results import PartResult

# Dimension separators: × x X * , and whitespace (after the width fold, so ，and ＊ are covered too).
_SEPARATORS = re.compile(r"\s*[×xX*,]\s*|\s+")
_WRAPPER = re.compile(r"^(?:torch\.Size|shape\s*[:=]?)?\s*[(\[]\s*(.*?)\s*[)\]]$", re.DOTALL)
_DIM = re.compile(r"\d{1,12}", re.ASCII)
# LaTeX as the seeds write shapes ("$8\times8\times128\times32$"): products as ×, spacing and $ dropped.
_LATEX_PRODUCT = re.compile(r"\\(?:times|cdot|cross)(?![a-zA-Z])|·|⋅|∙")
_LATEX_NOISE = re.compile(r"\$|\\[,;:! ]|\\(?:left|right)(?![a-zA-Z])|\\mathrm\{[^{}]*\}")


def read_shape(text: str) -> list[int] | None:
    """Read the dimensions, or None when the text is not a list of non-negative integers."""
    text = _LATEX_PRODUCT.sub("×", fold_width(text))
    text = strip_trailing_punct(_LATEX_NOISE.sub(" ", text).strip())
    inner = text
    for _ in range(2):  # torch.Size([8, 8]) has two wrappers
        m = _WRAPPER.match(inner)
        if m is None:
            break
        inner = m.group(1)
    parts = _SEPARATORS.split(inner)
    if parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()  # the trailing comma of a 1-tuple, "(8,)"
    if not parts or not all(_DIM.fullmatch(p) for p in parts):
        return None
    return [int(p) for p in parts]


def grade_shape(submitted: str, spec: ShapeSpec) -> PartResult:
    """Grade a tensor shape.

    Args:
        submitted: the student's raw text, with ×, x, *, commas or spaces between dimensions, optionally in
            brackets or ``torch.Size([...])``.
        spec: the part's ShapeSpec.

    Returns:
        Full credit or none; ``normalized`` is e.g. ``"8×8×128×32"``. A wrong number of dimensions is reported
        as such (revealing only how many dimensions are expected).
    """
    rejected = precheck(submitted, limit=500)
    if rejected is not None:
        return rejected
    equation = _equation(submitted, spec)
    if equation.refusal is not None:
        return wrong(equation.refusal)
    submitted = equation.value
    dims = read_shape(submitted)
    if dims is None:
        return wrong(_not_a_shape(submitted))
    normalized = "×".join(str(d) for d in dims)
    if len(dims) != len(spec.answer):
        return wrong(f"expected {len(spec.answer)} dimensions, got {len(dims)}", normalized)
    if dims != list(spec.answer):
        off = sum(1 for d, a in zip(dims, spec.answer, strict=True) if d != a)
        return wrong(f"{off} of {len(dims)} dimensions are not right", normalized)
    return right(normalized)


def _equation(submitted: str, spec: ShapeSpec) -> Equation:
    def earns(side: str) -> bool | None:
        dims = read_shape(side)
        return None if dims is None else dims == list(spec.answer)

    return read_equation(submitted, spec.names, earns)


def _not_a_shape(submitted: str) -> str:
    return f"expected a shape such as 2×3×4, got {quote(submitted)}"


def shape_format_error(submitted: str, spec: ShapeSpec) -> str | None:
    """Why ``submitted`` is not a shape at all (e.g. a letter among the sizes), or None."""
    value = last_side(submitted)
    return _not_a_shape(submitted) if read_shape(value) is None else None
