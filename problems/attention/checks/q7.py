"""Checks of q7: the student's ``test_permutation_equivariance(layer)`` must pass the 3 equivariant layers and
raise AssertionError on the 3 non-equivariant ones (1.5 points per layer), and build its inputs as the prompt says
(random x, random permutation: 1 point, checked on the source); 10 points.

Every check pays only once the test judges the two basic layers correctly (judge_probe.basic_layers_probe): a test
that never fails, or always fails, gets nothing for the layers it happens to classify right.
"""

from checklibs.attention.basic import gate_all, gated
from checklibs.attention.judge_probe import basic_layers_probe
from checklibs.attention.prompt_rules import LAYER_ARGS, Q7_RULES, source_rules_check
from checklibs.attention.student_test_judge import layer_checks

ENTRY = "test_permutation_equivariance"
BASIC = basic_layers_probe(ENTRY)

CHECKS = [
    *gate_all(layer_checks(points_per_layer=1.5, entry=ENTRY), BASIC),
    gated(source_rules_check(points=1, entry=ENTRY, rules=Q7_RULES, args=LAYER_ARGS, name="test_method"), BASIC),
]
