"""q7's basic probe: a student's test earns points only once it judges two basic layers correctly.

A test that never fails passes every equivariant layer, and one that always fails rejects every other layer: half
the points for no testing at all. The basic case of a test is the plain masked attention layer (it must return)
and the first non-equivariant layer (positional encodings: it must raise AssertionError), each judged exactly as
the layer checks judge (student_test_judge.judge: every layer an opaque trusted stand-in, run in a random order),
so the probe cannot be told apart from a graded run.
"""

from __future__ import annotations

from checklibs.attention.basic import Probe
from checklibs.attention.layers import LAYERS
from checklibs.attention.student_test_judge import judge
from graders.code.check_api import CheckFailed, StudentProxy


def basic_layers_probe(entry: str = "test_permutation_equivariance", *, visible: bool = False) -> Probe:
    """A probe that the test passes the first equivariant layer and rejects the first non-equivariant one."""
    equivariant = next(layer for layer in LAYERS if layer.equivariant)
    broken = next(layer for layer in LAYERS if not layer.equivariant)

    def probe(student: StudentProxy) -> str | None:
        for layer, label in ((equivariant, "a basic equivariant layer"), (broken, "a basic non-equivariant layer")):
            try:
                judge(student, entry, layer, label, visible=visible)
            except CheckFailed as failed:
                return failed.feedback
        return None

    return probe
