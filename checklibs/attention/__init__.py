"""The attention check library: check builders a problem set's checks/*.py composes into ``CHECKS``.

Each builder returns an ``@check`` function with a fixed category; all comparisons run on the trusted side
against ``reference.reference_attention`` (float64), with seeded inputs. Example (checks/q5.py)::

    from checklibs.attention import masking_check, reference_example_check, softmax_axis_check

    CHECKS = [reference_example_check(points=2), softmax_axis_check(points=2), masking_check(points=4)]
"""

from checklibs.attention.determinism import determinism_check
from checklibs.attention.empty_row import empty_row_check
from checklibs.attention.equivariance import equivariance_check
from checklibs.attention.gradient import gradient_check
from checklibs.attention.masking import masking_check
from checklibs.attention.reference import reference_attention
from checklibs.attention.reference_example import reference_example_check
from checklibs.attention.softmax_axis import softmax_axis_check
from checklibs.attention.stability import stability_check
from checklibs.attention.timing import timing_check
from checklibs.attention.validation import validation_check

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
