"""Permutation equivariance of self-attention without positions: f(PX) = P f(X), masks permuted alongside."""

from __future__ import annotations

from checklibs.attention.basic import attention_probe, gate, no_probe
from checklibs.attention.calling import call_attention, is_visible
from checklibs.attention.compare import compare
from checklibs.attention.inputs import AttentionCase, generator, key_valid_mask, permutation, randn
from graders.code.check_api import CheckFailed, CheckFunc, StudentProxy, check

RTOL, ATOL = 1e-7, 1e-9


def equivariance_check(
    *,
    points: float = 1.0,
    entry: str = "scaled_attention",
    name: str = "equivariance",
    visibility: str = "hidden",
    basic: bool = True,
    needs: str | None = "softmax_axis",
) -> CheckFunc:
    """Build the check f(PX) = P f(X) for q = k = v = X with key_valid permuted alongside.

    With ``basic`` (the default) the points need correct results on a basic case first (basic.gate; ``needs``
    names the check of the set that tests that case, for the feedback): a function
    returning zeros is equivariant too.
    """

    visible = is_visible(visibility)
    probe = attention_probe(entry, visible=visible, needs=needs) if basic else no_probe

    @check(points=points, category="equivariance", visibility=visibility, name=name)
    def equivariance(student: StudentProxy) -> str | None:
        """Self-attention (q = k = v = x) commutes with permuting the tokens and the mask together."""
        return gate(student, probe, lambda: _equivariance(student, entry, visible))

    return equivariance


def _equivariance(student: StudentProxy, entry: str, visible: bool) -> str:
    gen = generator(71)
    x = randn(gen, 2, 2, 7, 4)
    key_valid = key_valid_mask(gen, 2, 7)
    perm = permutation(gen, 7)
    plain = AttentionCase("x", x, x, x, key_valid)
    permuted = AttentionCase("P x", x[:, :, perm], x[:, :, perm], x[:, :, perm], key_valid[:, perm])
    out, weights = call_attention(student, entry, plain, visible=visible)
    out_p, weights_p = call_attention(student, entry, permuted, visible=visible)
    permuted_weights = weights[:, :, perm][..., perm]
    for problem in (
        compare(out_p, out[:, :, perm], rtol=RTOL, atol=ATOL, what="the output f(PX)", against="P f(X)"),
        compare(weights_p, permuted_weights, rtol=RTOL, atol=ATOL, what="the weights of PX", against="P A Pᵀ"),
    ):
        if problem:
            raise CheckFailed(
                f"permuting the tokens (and key_valid with them) should permute the result the same way: "
                f"{problem}. Attention has no notion of position unless you add one."
            )
    return "f(PX) = P f(X) holds for self-attention with a permuted mask."
