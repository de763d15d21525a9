"""q7: grade the student's ``test_permutation_equivariance(layer)`` by the layers it accepts and rejects.

One check per layer: the test must return normally on an equivariant layer and raise AssertionError on a
non-equivariant one. A test that always raises, or never does, therefore loses the points of half the layers.

A test must only be able to tell the layers apart by testing them. The layers stay on the trusted side
(layers.make_layers: trusted functions with freshly seeded weights); the test receives an opaque proxy whose calls
come back here. Each check runs the test on every layer, in a random order, judging only the call on its own layer:
neither the proxy nor the number of calls so far says which layer is being judged (a test that counts its calls
would otherwise know that the third call is always layer 2).
"""

from __future__ import annotations

from checklibs.attention.calling import is_visible, student_message
from checklibs.attention.layers import LAYERS, LayerSpec, make_layers, random_order
from graders.code.check_api import CheckFailed, CheckFunc, StudentError, StudentProxy, TrustedFunction, check

REJECT_HINT = (
    "A good test permutes the token axis of x AND key_valid with the same permutation, compares layer(Px, P mask) "
    "with P layer(x, mask), uses a key_valid with some False entries, and raises AssertionError on a mismatch."
)
ACCEPT_HINT = (
    "Permute key_valid together with x, compare layer(Px, P mask) with P applied to layer(x, mask) (not with "
    "layer(x, mask) itself), and allow floating-point tolerance (e.g. torch.testing.assert_close)."
)


def run_test(student: StudentProxy, entry: str, layer: TrustedFunction) -> StudentError | None:
    """Run the student's test on ``layer``; the error it raised, or None."""
    try:
        student.call(entry, layer)
    except StudentError as err:
        return err
    return None


def verdict(layer: LayerSpec, label: str, err: StudentError | None, *, visible: bool = False) -> str:
    """Feedback when the test classified the layer correctly; CheckFailed when it did not."""
    kind = "equivariant" if layer.equivariant else "NOT permutation-equivariant"
    if err is None:
        if not layer.equivariant:
            raise CheckFailed(f"your test returned normally on {label}, which is {kind} ({layer.what}). {REJECT_HINT}")
        return f"correct: {label} is {kind} ({layer.what}) and your test passed it."
    if err.type_name != "AssertionError":
        raise CheckFailed(
            f"your test raised {student_message(err, visible=visible)} on {label} (it should "
            f"{'return normally' if layer.equivariant else 'raise AssertionError'})"
        )
    if layer.equivariant:
        raise CheckFailed(
            f"your test raised AssertionError on {label}, which is {kind} ({layer.what}): "
            f"{student_message(err, visible=visible)}. {ACCEPT_HINT}"
        )
    return f"correct: {label} is {kind} ({layer.what}) and your test raised AssertionError."


def judge(student: StudentProxy, entry: str, layer: LayerSpec, label: str, *, visible: bool = False) -> str:
    """Run the student's test on every layer in a random order; pass when it classifies ``layer`` correctly."""
    functions = make_layers(LAYERS)
    judged: StudentError | None = None
    for spec in random_order(LAYERS):
        err = run_test(student, entry, functions[spec.key])
        if spec.key == layer.key:
            judged = err
    return verdict(layer, label, judged, visible=visible)


def layer_checks(
    *, points_per_layer: float = 1.5, entry: str = "test_permutation_equivariance", visibility: str = "hidden"
) -> list[CheckFunc]:
    """Build one equivariance check per layer in ``layers.LAYERS`` (named layer_0, layer_1, ...)."""
    visible = is_visible(visibility)
    checks: list[CheckFunc] = []
    for index, layer in enumerate(LAYERS):
        label = f"layer_{index}"

        def run(student: StudentProxy, layer: LayerSpec = layer, label: str = label) -> str:
            return judge(student, entry, layer, label, visible=visible)

        run.__doc__ = f"The test {'passes' if layer.equivariant else 'rejects'} {label}."
        checks.append(check(points=points_per_layer, category="equivariance", visibility=visibility, name=label)(run))
    return checks
