"""The attention check library: check builders a problem set's checks/*.py composes into ``CHECKS``.

Each builder returns an ``@check`` function with a fixed category; all comparisons run on the trusted side
against ``reference.reference_attention`` (float64), with seeded inputs. Example (checks/q5.py)::

    from graders.code.attention import masking_check, reference_example_check, softmax_axis_check

    CHECKS = [reference_example_check(points=2), softmax_axis_check(points=2), masking_check(points=4)]
"""

from graders.code.attention.determinism import determinism_check
from graders.code.attention.empty_row import empty_row_check
from graders.code.attention.equivariance import equivariance_check
from graders.code.attention.gradient import gradient_check
from graders.code.attention.masking import masking_check
from graders.code.attention.reference import reference_attention
from graders.code.attention.reference_example import reference_example_check
from graders.code.attention.softmax_axis import softmax_axis_check
from graders.code.attention.stability import stability_check
from graders.code.attention.timing import timing_check
from graders.code.attention.validation import validation_check

__all__ = [
    "determinism_check",
    "empty_row_check",
    "equivariance_check",
    "gradient_check",
    "masking_check",
    "reference_attention",
    "reference_example_check",
    "softmax_axis_check",
    "stability_check",
    "timing_check",
    "validation_check",
]
