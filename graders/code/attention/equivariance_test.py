"""q7: grade the student's ``test_permutation_equivariance(layer)`` by the layers it accepts and rejects.

One check per layer: the test must return normally on an equivariant layer and raise AssertionError on a
non-equivariant one. A test that always raises, or never does, therefore loses the points of half the layers.
"""

from __future__ import annotations

from graders.code.attention.layers import LAYERS, LAYERS_SOURCE, LayerSpec
from graders.code.checks import CheckFailed, CheckFunc, Ref, StudentError, StudentProxy, check

MAX_MESSAGE = 300
REJECT_HINT = (
    "A good test permutes the token axis of x AND key_valid with the same permutation, compares layer(Px, P mask) "
    "with P layer(x, mask), uses a key_valid with some False entries, and raises AssertionError on a mismatch."
)
ACCEPT_HINT = (
    "Permute key_valid together with x, compare layer(Px, P mask) with P applied to layer(x, mask) (not with "
    "layer(x, mask) itself), and allow floating-point tolerance (e.g. torch.testing.assert_close)."
)


def _short(message: str) -> str:
    message = " ".join(message.split())
    return message if len(message) <= MAX_MESSAGE else message[: MAX_MESSAGE - 1] + "…"


def judge(student: StudentProxy, entry: str, layer: LayerSpec, label: str) -> str:
    """Run the student's test on one layer; pass when it classifies the layer correctly."""
    student.define(LAYERS_SOURCE)
    kind = "equivariant" if layer.equivariant else "NOT permutation-equivariant"
    try:
        student.call(entry, Ref(layer.name))
    except StudentError as err:
        if err.type_name != "AssertionError":
            raise CheckFailed(
                f"your test raised {err.type_name} on {label} (it should "
                f"{'return normally' if layer.equivariant else 'raise AssertionError'}): {_short(err.message)}"
            ) from None
        if layer.equivariant:
            raise CheckFailed(
                f"your test raised AssertionError on {label}, which is {kind} ({layer.what}): "
                f"{_short(err.message)}. {ACCEPT_HINT}"
            ) from None
        return f"correct: {label} is {kind} ({layer.what}) and your test raised AssertionError."
    if not layer.equivariant:
        raise CheckFailed(f"your test returned normally on {label}, which is {kind} ({layer.what}). {REJECT_HINT}")
    return f"correct: {label} is {kind} ({layer.what}) and your test passed it."


def layer_checks(
    *, points_per_layer: float = 1.5, entry: str = "test_permutation_equivariance", visibility: str = "hidden"
) -> list[CheckFunc]:
    """Build one equivariance check per layer in ``layers.LAYERS`` (named layer_0, layer_1, ...)."""
    checks: list[CheckFunc] = []
    for index, layer in enumerate(LAYERS):
        label = f"layer_{index}"

        def run(student: StudentProxy, layer: LayerSpec = layer, label: str = label) -> str:
            return judge(student, entry, layer, label)

        run.__doc__ = f"The test {'passes' if layer.equivariant else 'rejects'} {label}."
        checks.append(check(points=points_per_layer, category="equivariance", visibility=visibility, name=label)(run))
    return checks
