"""Checks of q6: ``attention_loop(q, k, v)`` and ``attention_batched(q, k, v)`` (no masks), 15 points.

Each version is checked against the reference on its own (values on non-symmetric inputs, float64 gradients,
large scores); then they are compared with each other (only once both are right on a basic case); then the
prompt's rules on how each is written are checked on the source (prompt_rules: a per-query loop without
torch.softmax or a whole score matrix; a batched version without Python loops); then they are timed over several T.
"""

from checklibs.attention import gradient_check, softmax_axis_check, stability_check
from checklibs.attention.basic import attention_probe
from checklibs.attention.loop_vs_batched import agreement_check, speedup_check
from checklibs.attention.prompt_rules import BATCHED_RULES, LOOP_RULES, source_rules_check

LOOP, BATCHED = "attention_loop", "attention_batched"

CHECKS = [
    softmax_axis_check(points=2, entry=LOOP, name="loop_matches_reference"),
    softmax_axis_check(points=2, entry=BATCHED, name="batched_matches_reference"),
    gradient_check(points=1, entry=LOOP, name="loop_gradient", masks=False),
    gradient_check(points=1, entry=BATCHED, name="batched_gradient", masks=False),
    stability_check(points=1, entry=LOOP, name="loop_stability", masks=False),
    stability_check(points=1, entry=BATCHED, name="batched_stability", masks=False),
    agreement_check(points=2, loop_entry=LOOP, batched_entry=BATCHED),
    source_rules_check(
        points=2,
        entry=LOOP,
        rules=LOOP_RULES,
        name="loop_method",
        probe=attention_probe(LOOP, needs="loop_matches_reference"),
    ),
    source_rules_check(
        points=1,
        entry=BATCHED,
        rules=BATCHED_RULES,
        name="batched_method",
        probe=attention_probe(BATCHED, needs="batched_matches_reference"),
    ),
    speedup_check(points=2, loop_entry=LOOP, batched_entry=BATCHED, sizes=(32, 128, 256), min_speedup=3, max_ratio=4),
]
