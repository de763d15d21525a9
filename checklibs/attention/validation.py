"""Input validation: ValueError for a wrong ndim or mismatched B, H, Tk (k vs v) or d_k (q vs k)."""

from __future__ import annotations

from functools import partial

from torch import Tensor

from checklibs.attention.basic import attention_probe, gate, no_probe
from checklibs.attention.calling import is_visible
from checklibs.attention.inputs import AttentionCase, generator, randn
from checklibs.attention.tally import Tally
from graders.code.check_api import CheckFailed, CheckFunc, StudentError, StudentProxy, TrustedText, check


def validation_cases() -> list[AttentionCase]:
    """Each case breaks one rule; sizes are chosen so broadcasting cannot hide it (B = 1 vs 2 would broadcast)."""
    g = generator(41)

    def t(*shape: int) -> Tensor:
        return randn(g, *shape)

    return [
        AttentionCase("q is 3-D", t(2, 5, 4), t(2, 2, 5, 4), t(2, 2, 5, 3)),
        AttentionCase("batch of k differs from q", t(2, 2, 5, 4), t(3, 2, 5, 4), t(3, 2, 5, 3)),
        AttentionCase("heads of k differ from q", t(2, 2, 5, 4), t(2, 3, 5, 4), t(2, 3, 5, 3)),
        AttentionCase("Tk of v differs from k", t(2, 2, 5, 4), t(2, 2, 5, 4), t(2, 2, 6, 3)),
        AttentionCase("d_k of q differs from k", t(2, 2, 5, 4), t(2, 2, 5, 3), t(2, 2, 5, 3)),
    ]


def expect_value_error(student: StudentProxy, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
    """Passes when the call raised ValueError; a hidden check says only whether it did (TrustedText.instead_of)."""
    try:
        student.call(entry, *case.args, **case.kwargs)
    except StudentError as err:
        if err.type_name != "ValueError":
            wrong = TrustedText(visible).instead_of(err.type_name, "ValueError")
            raise CheckFailed(f"raised {wrong}; check the shapes yourself before computing") from None
        return
    raise CheckFailed("returned normally; expected ValueError")


def validation_check(
    *,
    points: float = 2.0,
    entry: str = "scaled_attention",
    name: str = "validation",
    visibility: str = "hidden",
    basic: bool = True,
    needs: str | None = "softmax_axis",
) -> CheckFunc:
    """Build the input-validation check (each of five malformed inputs must raise ValueError).

    With ``basic`` (the default) the points need correct results on a basic case first (basic.gate; ``needs``
    names the check of the set that tests that case, for the feedback): raising on
    bad shapes is worth nothing in a function that computes nothing.
    """
    visible = is_visible(visibility)
    probe = attention_probe(entry, visible=visible, needs=needs) if basic else no_probe

    @check(points=points, category="validation", visibility=visibility, name=name)
    def validation(student: StudentProxy) -> str | None:
        """ValueError for a wrong ndim or mismatched B, H, Tk (k vs v), d_k (q vs k)."""

        def body() -> str:
            tally = Tally("input validation")
            for case in validation_cases():
                expect = partial(expect_value_error, student, entry, case, visible=visible)
                tally.run(f"{case.label} ({case.describe()})", expect)
            return tally.finish()

        return gate(student, probe, body)

    return validation
