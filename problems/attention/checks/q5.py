"""Checks of q5: masked scaled dot-product attention ``scaled_attention(q, k, v, key_valid=None, causal=False)``.

24 points. Composed from the attention check library; tensors are small so a warm grading stays well under a
second on one CPU core. Validation, empty rows, determinism, equivariance, dtypes and the source rules pay only
when the function is correct on a basic case (checklibs/attention/basic.py). The prompt's rules and the check
grading each are listed in checklibs/attention/prompt_rules.py.
"""

from checklibs.attention import (
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
from checklibs.attention.basic import attention_probe
from checklibs.attention.dtype_device import dtype_device_check
from checklibs.attention.prompt_rules import Q5_RULES, source_rules_check

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
    dtype_device_check(points=1, entry=ENTRY),
    source_rules_check(points=3, entry=ENTRY, rules=Q5_RULES, probe=attention_probe(ENTRY, needs="softmax_axis")),
    timing_check(points=1, entry=ENTRY, sizes=(128, 256)),
]
