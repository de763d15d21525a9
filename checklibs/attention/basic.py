"""Points for real work only: checks of secondary properties pay only when the basic computation is right.

A function that returns zeros of the right shape raises on bad shapes, is deterministic, equivariant and agrees
with another function returning zeros: without this gate such properties earn points on their own. So checks of
error behaviour, determinism, agreement, equivariance, dtypes and of how the code is written first run one basic
correctness probe against the trusted reference (``basic_problem``); when it fails the check scores 0 and says why
(``gate``). The check's own body still runs, so its diagnosis is shown too (e.g. "two calls gave different
weights" for dropout left on).

The probe is repeated by every gated check rather than cached: each check gets a proxy of its own (see
graders/code/slot_grading.py), and the outcome is not shared through any object that outlives one check, so
nothing can leak between checks or submissions. It costs one small call (two for q6's pair, two test runs per
basic layer for q7) per gated check, and a submission that answers the first call correctly and later ones
wrongly is probed again each time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from checklibs.attention.calling import call_attention
from checklibs.attention.compare import compare
from checklibs.attention.inputs import AttentionCase, random_case
from checklibs.attention.reference import reference_attention
from graders.code.check_api import (
    N_,
    CheckFailed,
    CheckFunc,
    Said,
    StudentProxy,
    Words,
    check,
    said,
    spec_of,
    text_said,
    words_of,
)

NEEDS_BASIC = N_("these points need correct results on a basic case first")
NEEDS_BASIC_BECAUSE = N_("these points need correct results on a basic case first: %(problem)s")
# The headline of a gated check whose probe failed: the check it waits on (the pages say when that one passed).
NEEDS_CHECK = N_("needs %(check)s first")
# Lenient on purpose: the probe asks "does it compute attention at all"; precision is judged by other checks.
BASIC_RTOL, BASIC_ATOL = 1e-4, 1e-6

Probe = Callable[[StudentProxy], "str | None"]


def basic_case() -> AttentionCase:
    """Plain attention, no masks (so it suits q6's functions too), non-symmetric scores with Tq != Tk."""
    return random_case("a basic case", 3, b=1, h=2, tq=3, tk=4)


def basic_problem(student: StudentProxy, entry: str, *, visible: bool = False) -> str | None:
    """Why ``entry`` is wrong on the basic case (raised, wrong shape, wrong values), or None when it is right."""
    case = basic_case()
    try:
        out, weights = call_attention(student, entry, case, visible=visible)
    except CheckFailed as failed:
        return failed.feedback
    ref_out, ref_w = reference_attention(case.q, case.k, case.v)
    for what, got, expected in (("weights", weights, ref_w), ("output", out, ref_out)):
        problem = compare(got, expected, rtol=BASIC_RTOL, atol=BASIC_ATOL, what=what)
        if problem:
            return f"{entry}({case.describe()}): {problem}"
    return None


@dataclass(frozen=True)
class AttentionProbe:
    """A probe that every function of ``entries`` computes attention correctly on the basic case.

    ``needs`` names the check of the same set that tests what the probe does (plain attention on non-symmetric
    scores, ``softmax_axis`` in q5): the gated checks' feedback says they wait on it.
    """

    entries: tuple[str, ...]
    visible: bool = False
    needs: str | None = None

    def __call__(self, student: StudentProxy) -> str | None:
        for entry in self.entries:
            problem = basic_problem(student, entry, visible=self.visible)
            if problem is not None:
                return problem
        return None


def attention_probe(*entries: str, visible: bool = False, needs: str | None = None) -> Probe:
    """A probe that every function of ``entries`` computes attention correctly on the basic case."""
    return AttentionProbe(entries, visible, needs)


def no_probe(student: StudentProxy) -> str | None:
    """The probe of an ungated check: always passes."""
    return None


Feedback = str | Said | Words | None
F = TypeVar("F", bound=Feedback)


def gate(student: StudentProxy, probe: Probe, body: Callable[[], F]) -> F:
    """Run a check's ``body`` only for its points when ``probe`` passes; otherwise score 0 and say why.

    The feedback's headline is "needs <check> first" when the probe names the check it stands for (``needs``);
    the details keep the body's own diagnosis and the basic case's problem.
    """
    problem = probe(student)
    if problem is None:
        return body()
    diagnosis: Words | None = None
    try:
        body()
    except CheckFailed as failed:
        diagnosis = failed.words or words_of(failed.feedback)
    except AssertionError as failed:
        diagnosis = words_of(str(failed) or "the check failed")
    because = said("attention.basic.needs_basic", NEEDS_BASIC_BECAUSE, problem=text_said(problem))
    needs = getattr(probe, "needs", None)
    lines = [] if diagnosis is None else [diagnosis.headline, *diagnosis.details]
    if needs is not None:
        raise CheckFailed(
            Words.fitted(said("attention.basic.needs", NEEDS_CHECK, check=needs), [*lines, because], needs)
        )
    if diagnosis is None:
        raise CheckFailed(Words(because))
    raise CheckFailed(Words.fitted(lines[0], [*lines[1:], because]))


def gated(func: CheckFunc, probe: Probe) -> CheckFunc:
    """The same check (name, points, category, visibility, budget) with its points behind ``probe``."""
    spec = spec_of(func)

    def run(student: StudentProxy) -> Feedback:
        return gate(student, probe, lambda: spec.func(student))

    run.__doc__ = spec.description
    return check(
        points=spec.points,
        category=spec.category,
        visibility=spec.visibility.value,
        timeout_s=spec.timeout_s,
        name=spec.name,
    )(run)


def gate_all(funcs: Sequence[CheckFunc], probe: Probe) -> list[CheckFunc]:
    return [gated(f, probe) for f in funcs]
