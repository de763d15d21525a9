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

from checklibs.attention.calling import call_attention
from checklibs.attention.compare import compare
from checklibs.attention.inputs import AttentionCase, random_case
from checklibs.attention.reference import reference_attention
from graders.code.check_api import CheckFailed, CheckFunc, StudentProxy, check, spec_of

NEEDS_BASIC = "these points need correct results on a basic case first"
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


def attention_probe(*entries: str, visible: bool = False) -> Probe:
    """A probe that every function of ``entries`` computes attention correctly on the basic case."""

    def probe(student: StudentProxy) -> str | None:
        for entry in entries:
            problem = basic_problem(student, entry, visible=visible)
            if problem is not None:
                return problem
        return None

    return probe


def no_probe(student: StudentProxy) -> str | None:
    """The probe of an ungated check: always passes."""
    return None


def gate(student: StudentProxy, probe: Probe, body: Callable[[], str | None]) -> str | None:
    """Run a check's ``body`` only for its points when ``probe`` passes; otherwise score 0 and say why."""
    problem = probe(student)
    if problem is None:
        return body()
    try:
        body()
    except CheckFailed as failed:
        raise CheckFailed(f"{failed.feedback}\n{NEEDS_BASIC}: {problem}") from None
    except AssertionError as failed:
        raise CheckFailed(f"{str(failed) or 'the check failed'}\n{NEEDS_BASIC}: {problem}") from None
    raise CheckFailed(f"{NEEDS_BASIC}: {problem}")


def gated(func: CheckFunc, probe: Probe) -> CheckFunc:
    """The same check (name, points, category, visibility, budget) with its points behind ``probe``."""
    spec = spec_of(func)

    def run(student: StudentProxy) -> str | None:
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
