"""GRADERS: the answer grader for each part kind, looked up by ``grade_part``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graders.answers.choice import grade_choice
from graders.answers.essay import grade_essay
from graders.answers.identifier import grade_identifier
from graders.answers.matrix import grade_matrix
from graders.answers.numeric import grade_numeric
from graders.answers.result import PartResult
from graders.answers.shape import grade_shape
from graders.answers.size import grade_size
from graders.answers.symbolic import grade_symbolic
from graders.answers.text import grade_text

GRADERS: dict[str, Callable[[str, Any], PartResult]] = {
    "text": grade_text,
    "choice": grade_choice,
    "numeric": grade_numeric,
    "matrix": grade_matrix,
    "shape": grade_shape,
    "size": grade_size,
    "symbolic": grade_symbolic,
    "identifier": grade_identifier,
    "essay": grade_essay,
}
