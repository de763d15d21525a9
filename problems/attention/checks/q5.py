"""Checks of q5: masked scaled dot-product attention ``scaled_attention(q, k, v, key_valid=None, causal=False)``.

20 points. Composed from the attention check library; tensors are small so a warm grading stays well under a
second on one CPU core.
"""

from graders.code.attention import (
    determinism_check,
    empty_row_check,
    equivariance_check,
    gradient_check,
    masking_check,
    reference_example_check,
    softmax_axis_check,
    stability_check,
    timing_check,
    validation_check,
)

ENTRY = "scaled_attention"

CHECKS = [
    reference_example_check(points=2, entry=ENTRY),
    softmax_axis_check(points=2, entry=ENTRY),
    masking_check(points=4, entry=ENTRY),
    empty_row_check(points=2, entry=ENTRY),
    validation_check(points=2, entry=ENTRY),
    gradient_check(points=3, entry=ENTRY),
    stability_check(points=2, entry=ENTRY),
    determinism_check(points=1, entry=ENTRY),
    equivariance_check(points=1, entry=ENTRY),
    timing_check(points=1, entry=ENTRY, sizes=(128, 256)),
]
