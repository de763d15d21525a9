"""Mask semantics: key_valid (True = may attend, on the KEY axis), causal (j <= i), and both together.

For each case: masked weights exactly 0, allowed rows summing to 1, all finite, values equal to the reference.
A failing case is then matched against the usual mistakes (inverted mask, mask on the query axis, the wrong
causal triangle, a finite fill value) to name the mistake instead of only reporting numbers.
"""

from __future__ import annotations

from functools import partial

import torch
from torch import Tensor

from checklibs.attention.calling import StudentRaised, call_attention, is_visible
from checklibs.attention.compare import compare_words, first_index, is_close, magnitude, nonfinite_problem
from checklibs.attention.inputs import AttentionCase, random_case
from checklibs.attention.reference import allowed_keys, masked_softmax, reference_attention, scaled_scores
from checklibs.attention.tally import Tally
from graders.code.check_api import N_, CheckFailed, CheckFunc, Said, StudentProxy, Words, check, said, words_of

RTOL, ATOL = 1e-6, 1e-9

CONVENTION = (
    "key_valid[b, j] = True means key j MAY be attended (the opposite of key_padding_mask in "
    "torch.nn.MultiheadAttention, where True means 'ignore this key')."
)
INVERTED = "your mask is inverted: you attend exactly the keys with key_valid = False. " + CONVENTION
QUERY_AXIS = (
    "you applied key_valid to the query axis (whole rows of the weights) instead of the key axis (the last axis): "
    "key_valid has shape (B, Tk) and masks keys, i.e. key_valid[:, None, None, :]. " + CONVENTION
)
WRONG_TRIANGLE = (
    "your causal mask keeps the wrong triangle: query i may attend key j only when j <= i (the lower triangle "
    "including the diagonal), i.e. no future keys."
)
BOTTOM_RIGHT = (
    "your causal mask is aligned to the bottom-right (query i attends keys j <= i + Tk - Tq, as when decoding with a "
    "cache); the prompt defines causal as j <= i for any Tq and Tk, counted from the first query and the first key"
)
CAUSAL_RAISED = (
    " With causal=True and no padding every query i may attend key 0 and, when i < Tk, key i itself (j <= i includes "
    "the diagonal, counted from the first key also when Tq != Tk), so no row is empty here."
)
KEY_VALID_RAISED = " Every query in this case has at least one allowed key. " + CONVENTION


def masking_cases() -> list[AttentionCase]:
    """Self-attention and cross-attention shapes: the prompt defines causal as j <= i for any Tq and Tk.

    With Tq != Tk the triangle starts at the top-left (query 0 sees key 0 only), not at the bottom-right as in
    decoding with a cache; a mask built Tq×Tq, or cut or padded to Tk, differs there too.
    """
    return [
        random_case("key_valid", 21, tq=6, tk=6, masked=True),
        random_case("key_valid, Tq=3, Tk=7", 22, tq=3, tk=7, masked=True),
        random_case("causal", 23, tq=6, tk=6, causal=True),
        random_case("key_valid and causal", 24, tq=6, tk=6, masked=True, causal=True),
        random_case("causal, Tq=4, Tk=7", 25, tq=4, tk=7, causal=True),
        random_case("causal, Tq=7, Tk=4", 26, tq=7, tk=4, causal=True),
        random_case("key_valid and causal, Tq=3, Tk=6", 27, tq=3, tk=6, masked=True, causal=True),
    ]


def _variant(case: AttentionCase, allowed: Tensor) -> Tensor | None:
    """Weights a mistaken mask would give, or None when it leaves some query with no key."""
    if not bool(allowed.any(dim=-1).all()):
        return None
    return masked_softmax(scaled_scores(case.q.double(), case.k.double()), allowed)


def _looks_query_masked(weights: Tensor, case: AttentionCase) -> bool:
    """Rows of invalid queries zeroed (or NaN) and the keys left unmasked: key_valid used on the query axis."""
    if case.key_valid is None or case.q.shape[2] != case.k.shape[2]:
        return False
    b, _, tq, tk = weights.shape
    unmasked = _variant(case, allowed_keys(b, tq, tk, None, case.causal))
    query_ok = case.key_valid.to(torch.bool)[:, None, :].expand(weights.shape[:3])
    dead_rows = ((weights == 0) | ~torch.isfinite(weights)).all(dim=-1)
    live_ok = unmasked is not None and bool(torch.isclose(weights.double(), unmasked, atol=1e-6)[query_ok].all())
    return live_ok and bool(dead_rows[~query_ok].all())


def diagnose(weights: Tensor, case: AttentionCase) -> str | None:
    """Name the mask mistake the student's weights match, if any."""
    b, _, tq, tk = weights.shape
    if case.key_valid is not None:
        inverted = _variant(case, allowed_keys(b, tq, tk, ~case.key_valid.to(torch.bool), case.causal))
        if inverted is not None and is_close(weights, inverted, rtol=1e-5, atol=1e-7):
            return INVERTED
        if _looks_query_masked(weights, case):
            return QUERY_AXIS
    if case.causal:
        upper = allowed_keys(b, tk, tq, None, True).transpose(-1, -2)
        if case.key_valid is not None:
            upper = upper & case.key_valid.to(torch.bool)[:, None, None, :]
        flipped = _variant(case, upper)
        if flipped is not None and is_close(weights, flipped, rtol=1e-5, atol=1e-7):
            return WRONG_TRIANGLE
        if tq != tk:
            rows, cols = torch.arange(tq)[:, None], torch.arange(tk)[None, :]
            shifted = allowed_keys(b, tq, tk, case.key_valid, False) & (cols <= rows + tk - tq)
            aligned = _variant(case, shifted)
            if aligned is not None and is_close(weights, aligned, rtol=1e-5, atol=1e-7):
                return BOTTOM_RIGHT
    return None


def masked_weight_problem(weights: Tensor, allowed: Tensor, *, visible: bool = False) -> str | None:
    """Masked weights must be exactly zero, not just small.

    The count, the largest weight and its index are decided by the student's output: a hidden check gives only
    the largest weight's order of magnitude (compare.magnitude), as for every other error it reports.
    """
    leaked = (weights != 0) & ~allowed
    if not bool(leaked.any()):
        return None
    largest = float(weights.double().abs().masked_fill(allowed, 0).nan_to_num(float("inf")).max())
    hint = ""
    if largest < 1e-3:
        hint = "; a large negative fill (e.g. -1e4 or -20) is not enough: fill with -inf or re-zero after softmax"
    if not visible:
        return (
            f"weights on masked keys must be exactly 0: some are not, the largest of order {magnitude(largest)}{hint}"
        )
    return (
        f"weights on masked keys must be exactly 0: {int(leaked.sum())} are not, largest |weight| {largest:.3g}, "
        f"first at index {first_index(leaked)}{hint}"
    )


ROW_SUM = N_("the weights of some query rows do not sum to 1 over their allowed keys")
ROW_SUM_AT = N_("the weights of query row %(row)s (b, h, i) do not sum to 1 over its allowed keys")


def row_sum_problem(weights: Tensor, *, visible: bool = False) -> str | None:
    """Each query's weights over its allowed keys sum to 1 (a hidden check does not name the row)."""
    found = row_sum_said(weights, visible=visible)
    return None if found is None else found.english()


def row_sum_said(weights: Tensor, *, visible: bool = False) -> Said | None:
    """``row_sum_problem`` as a sentence the pages translate."""
    sums = weights.double().sum(dim=-1)
    off = ~torch.isclose(sums, torch.ones_like(sums), rtol=0, atol=1e-6)
    if not bool(off.any()):
        return None
    if visible:
        return said("attention.masking.row_sum_at", ROW_SUM_AT, row=str(first_index(off)))
    return said("attention.masking.row_sum", ROW_SUM)


def check_mask_case(student: StudentProxy, entry: str, case: AttentionCase, *, visible: bool = False) -> None:
    """One case: every property, then a diagnosis of the mistake behind the first failure."""
    ref_out, ref_w = reference_attention(case.q, case.k, case.v, case.key_valid, case.causal)
    try:
        out, weights = call_attention(student, entry, case, visible=visible)
    except StudentRaised as err:
        if err.type_name == "ValueError":  # fixed words, whatever the message: one bit
            hint = CAUSAL_RAISED if case.key_valid is None else KEY_VALID_RAISED
            raise CheckFailed(err.feedback + hint) from None
        raise
    allowed = allowed_keys(case.q.shape[0], case.q.shape[2], case.k.shape[2], case.key_valid, case.causal)
    allowed = allowed.expand(weights.shape)
    problems = [
        nonfinite_problem(weights, "weights", visible=visible),
        nonfinite_problem(out, "output", visible=visible),
        masked_weight_problem(weights, allowed, visible=visible),
        row_sum_said(weights, visible=visible),
        compare_words(weights, ref_w, rtol=RTOL, atol=ATOL, what="weights", visible=visible),
        compare_words(out, ref_out, rtol=RTOL, atol=ATOL, what="output", visible=visible),
    ]
    found = [words_of(p) for p in problems if p]
    if found:
        diagnosis = diagnose(weights, case)
        if diagnosis:
            raise CheckFailed(diagnosis)
        # The first problem is the headline; the second, and the numbers, are details.
        first = found[0]
        rest = [line for words in found[1:2] for line in (words.headline, *words.details)]
        raise CheckFailed(Words.fitted(first.headline, [*first.details, *rest]))


def masking_check(
    *, points: float = 4.0, entry: str = "scaled_attention", name: str = "masking", visibility: str = "hidden"
) -> CheckFunc:
    """Build the mask-semantics check: key_valid alone (self- and cross-attention), causal alone, and both."""

    visible = is_visible(visibility)

    @check(points=points, category="masking", visibility=visibility, name=name)
    def masking(student: StudentProxy) -> str:
        """key_valid (True = allowed), causal (j <= i), both: zeros, row sums, finiteness, values."""
        tally = Tally("masking")
        for case in masking_cases():
            tally.run(case.label, partial(check_mask_case, student, entry, case, visible=visible))
        return tally.finish()

    return masking
