"""Correct programs as students write them score full marks; the checks that close issue 23's gaps catch the gaps.

honest/ holds correct q5 and q6 programs in styles the set's solutions do not all use (helpers, a large negative
fill re-zeroed, float64 inside, an additive bias from a copy of the mask written in place, module classes with
__init__ and inheritance, a vmapped batched version); they run here, in-process, with every check of the set but
the timed ones (the sandboxed gate times the shipped solutions). The set's own solutions run here too, so a style
that a source rule refuses fails fast, before the slow gate.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from checklibs.attention.inputs import large_score_heads_case
from checklibs.attention.reference import allowed_keys, reference_attention, scaled_scores
from checklibs.attention.stability import stability_cases, tolerance
from graders.code.checks import load_checks
from tests.checklibs.attention.direct_proxy import DirectProxy, run_check

SET_ROOT = Path(__file__).resolve().parents[3] / "problems" / "attention"
HONEST = Path(__file__).resolve().parent / "honest"
TIMED = {"timing", "batched_faster"}


def _files(question: str) -> list[Path]:
    return sorted(HONEST.glob(f"{question}_*.py")) + sorted((SET_ROOT / "solutions" / question).glob("*.py"))


def lost_points(path: Path, question: str) -> dict[str, str]:
    """Check name -> feedback for every untimed check of ``question`` in which ``path`` lost points."""
    proxy = DirectProxy(path.read_text(encoding="utf-8"), str(path))
    lost = {}
    for spec in load_checks(SET_ROOT / "checks" / f"{question}.py"):
        if spec.name in TIMED:
            continue
        result = run_check(spec, proxy)
        if result.score < result.max_score - 1e-9:
            lost[spec.name] = result.feedback
    return lost


@pytest.mark.parametrize("path", _files("q5"), ids=lambda p: p.name)
def test_correct_q5_programs_score_full_marks(path):
    assert lost_points(path, "q5") == {}


@pytest.mark.parametrize("path", _files("q6"), ids=lambda p: p.name)
def test_correct_q6_programs_score_full_marks(path):
    assert lost_points(path, "q6") == {}


@pytest.mark.parametrize(
    ("mutant", "checks"),
    [
        ("q5/causal_bottom_right.py", {"masking", "gradient", "empty_row"}),
        ("q5/causal_square_mask.py", {"masking", "gradient", "empty_row"}),
        ("q5/exp_before_mask.py", {"stability"}),
        ("q5/renormalised_softmax.py", {"stability"}),
        ("q5/mask_flipped_in_place.py", {"method"}),
        ("q6/loop_global_max.py", {"loop_stability"}),
    ],
)
def test_each_gap_mutant_loses_exactly_the_checks_of_its_gap(mutant, checks):
    """Without the new cases each of these scored full marks (issue 23); now only the checks of its gap see it."""
    assert set(lost_points(SET_ROOT / "mutants" / mutant, mutant[:2])) == checks


@pytest.mark.parametrize("masked", [True, False])
def test_the_many_head_stability_case_has_exact_one_hot_weights(masked):
    case = large_score_heads_case(torch.float32, masked=masked)
    _, weights = reference_attention(case.q, case.k, case.v, case.key_valid)
    assert bool(((weights == 0) | (weights == 1)).all()) and bool((weights.sum(-1) == 1).all())
    scores = scaled_scores(case.q.double(), case.k.double())
    row_max = scores.amax(dim=-1)
    assert float(row_max[:, 0].min()) - float(row_max[:, 1].max()) >= 1e4  # heads' maxima far apart
    if masked:
        assert case.key_valid is not None
        allowed = allowed_keys(2, case.q.shape[2], case.k.shape[2], case.key_valid, False).expand_as(scores)
        largest = scores == row_max[..., None]
        assert not bool((largest & allowed).any())  # every row's largest score sits on a masked key


def test_the_float32_tolerance_holds_a_correct_logsumexp_and_refuses_a_wrong_weight():
    """exp(s - logsumexp(s)) in float32 is off by ~5e-4 at scores ~1e4: the old rtol=1e-5 refused it."""
    worst = 0.0
    for case in stability_cases(masks=True):
        rtol, atol = tolerance(case)
        s = scaled_scores(case.q, case.k)
        if case.key_valid is not None:
            s = s.masked_fill(~case.key_valid[:, None, None, :], float("-inf"))
        weights = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
        _, expected = reference_attention(case.q, case.k, case.v, case.key_valid)
        assert torch.allclose(weights.double(), expected, rtol=rtol, atol=atol), case.label
        assert rtol < 0.05  # a weight off by O(1) (or 0.05) is still refused
        worst = max(worst, float((weights.double() - expected).abs().max()))
    assert worst > 1e-4
