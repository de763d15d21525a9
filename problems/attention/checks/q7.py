"""Checks of q7: the student's ``test_permutation_equivariance(layer)`` must pass the 3 equivariant layers and
raise AssertionError on the 3 non-equivariant ones (1.5 points per layer, 9 points)."""

from graders.code.attention.student_test_judge import layer_checks

CHECKS = layer_checks(points_per_layer=1.5, entry="test_permutation_equivariance")
