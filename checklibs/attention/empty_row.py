"""A query with no allowed key must raise ValueError: its softmax is 0/0, and NaN must not leak out."""

from __future__ import annotations

from functools import partial

import torch

from checklibs.attention.basic import attention_probe, gate, no_probe
from checklibs.attention.calling import as_pair, is_visible
from checklibs.attention.inputs import AttentionCase, random_case
from checklibs.attention.tally import Tally
from graders.code.check_api import CheckFailed, CheckFunc, StudentError, StudentProxy, TrustedText, check


def empty_row_cases() -> list[AttentionCase]:
    all_false = random_case("key_valid all False for batch 1", 31, masked=True)
    assert all_false.key_valid is not None
    key_valid = all_false.key_valid.clone()
    key_valid[1] = False
    causal = random_case("causal with key 0 invalid (query 0 has no key)", 32, masked=True, causal=True)
    assert causal.key_valid is not None
    causal_valid = causal.key_valid.clone()
    causal_valid[0, 0] = False
    # Tq < Tk: query 0 still sees key 0 only (j <= i from the top-left); a bottom-right triangle would give it keys.
    label = "causal, Tq=3, Tk=6, key 0 invalid (query 0 has no key)"
    wide = random_case(label, 33, tq=3, tk=6, masked=True, causal=True)
    assert wide.key_valid is not None
    wide_valid = wide.key_valid.clone()
    wide_valid[:, 0] = False
    return [
        all_false.with_(key_valid=key_valid),
        causal.with_(key_valid=causal_valid),
        wide.with_(key_valid=wide_valid),
    ]


def expect_value_error(student: StudentProxy, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
    try:
        result = student.call(entry, *case.args, **case.kwargs)
    except StudentError as err:
        if err.type_name != "ValueError":
            raise CheckFailed(f"raised {TrustedText(visible).instead_of(err.type_name, 'ValueError')}") from None
        return
    _, weights = as_pair(result, entry, case)
    if isinstance(weights, torch.Tensor) and bool(torch.isnan(weights).any()):
        raise CheckFailed(
            "returned NaN weights instead of raising ValueError: softmax over a row that is all -inf is 0/0; check "
            "for queries with no allowed key before the softmax and raise ValueError"
        )
    raise CheckFailed("returned normally; a query with no allowed key must raise ValueError (its softmax is 0/0)")


def empty_row_check(
    *,
    points: float = 2.0,
    entry: str = "scaled_attention",
    name: str = "empty_row",
    visibility: str = "hidden",
    basic: bool = True,
    needs: str | None = "softmax_axis",
) -> CheckFunc:
    """Build the check that a query with no allowed key raises ValueError instead of producing NaN.

    With ``basic`` (the default) the points need correct results on a basic case first (basic.gate; ``needs``
    names the check of the set that tests that case, for the feedback).
    """

    visible = is_visible(visibility)
    probe = attention_probe(entry, visible=visible, needs=needs) if basic else no_probe

    @check(points=points, category="empty_row", visibility=visibility, name=name)
    def empty_row(student: StudentProxy) -> str | None:
        """A query with no allowed key raises ValueError (not NaN)."""

        def body() -> str:
            tally = Tally("empty rows raise ValueError")
            for case in empty_row_cases():
                tally.run(case.label, partial(expect_value_error, student, entry, case, visible=visible))
            return tally.finish()

        return gate(student, probe, body)

    return empty_row
