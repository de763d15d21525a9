"""The gate of a parameterised problem: draw N variants in the set's checker and refuse a generator that is not
deterministic, that fails or runs past its time, or whose answers its own parts do not accept."""

from __future__ import annotations

import random

from graders.answers.registry import answer_kind, grade_part
from graders.model import ProblemBase
from graders.problemset.errors import SetError
from graders.problemset.loader import SET_FILE, LoadedSet
from graders.problemset.validate import ValidationReport
from graders.problemset.variants import (
    Variant,
    VariantFailed,
    VariantInvalid,
    VariantSource,
    apply_variant,
    parse_variant,
    prompt_names,
    render_prompt,
)

DEFAULT_DRAWS = 20


def gate_seeds(problem_id: str, draws: int) -> list[int]:
    """Seed 0 (the set's own numbers, by convention) and draws - 1 others, the same on every run of the gate."""
    rng = random.Random(f"variant-gate/{problem_id}")  # noqa: S311 - reproducible draws, not secrets
    return [0, *(rng.getrandbits(48) for _ in range(max(0, draws - 1)))]


def check_variants(
    loaded: LoadedSet,
    problem: ProblemBase,
    where: str,
    source: VariantSource | None,
    report: ValidationReport,
    draws: int = DEFAULT_DRAWS,
) -> None:
    """Draw ``draws`` variants (each twice, the second time in reverse order) and add what is wrong to ``report``."""
    if problem.generator is None:
        return
    if source is None:
        report.notes.append(f"{problem.id}: generator not run (no checker), so its variants are not checked")
        return
    at = f"{where}.generator"
    seeds = gate_seeds(problem.id, draws)
    first: dict[int, Variant] = {}
    try:
        for seed in seeds:
            first[seed] = parse_variant(source.variant(loaded.root, problem.generator, seed), problem)
        again = {
            seed: parse_variant(source.variant(loaded.root, problem.generator, seed), problem) for seed in seeds[::-1]
        }
    except (VariantFailed, VariantInvalid) as exc:
        which = f"seed {seeds[len(first)]}" if len(first) < len(seeds) else "drawn again"
        report.errors.append(SetError(problem.generator, "", f"{which}: {exc}"[:1000]))
        return
    changed = [seed for seed in seeds if again[seed] != first[seed]]
    if changed:
        report.errors.append(
            SetError(SET_FILE, at, f"not deterministic: seed {changed[0]} gave a different variant when drawn again")
        )
        return
    prompts: dict[str, dict[str, str]] = {}
    prompt = loaded.prompt(problem.id)
    for seed, variant in first.items():
        keys = _own_answers_accepted(problem, variant, seed, at, report)
        if keys is None:
            return
        shown = render_prompt(prompt, variant)
        if prompts.setdefault(shown, keys) != keys:
            report.errors.append(
                SetError(SET_FILE, at, f"seed {seed}: two variants show the same prompt with different keys")
            )
            return
    report.variant_parts[problem.id] = sorted(set().union(*(v.parts for v in first.values())))
    report.notes.append(f"{problem.id}: {len(seeds)} variants drawn, {len(prompts)} different prompts")


def _where_of(at: str) -> str:
    """``problems[3]`` of ``problems[3].generator``: where a part's examples are written."""
    return at.removesuffix(".generator")


def _own_answers_accepted(
    problem: ProblemBase, variant: Variant, seed: int, at: str, report: ValidationReport
) -> dict[str, str] | None:
    """Each part's released key must score full marks on its own grader; the keys, or None after an error."""
    mine = apply_variant(problem, variant)
    keys: dict[str, str] = {}
    for part_id, spec in zip(mine.part_ids(), mine.answer_parts(), strict=False):
        key = answer_kind(spec.kind).released_key(spec)
        if not key:
            continue
        keys[part_id] = key
        result = grade_part(key, spec)
        if not result.correct:
            report.errors.append(
                SetError(
                    SET_FILE,
                    f"{at}.{part_id}",
                    f"seed {seed}: the part's own answer {key!r} is not accepted by its grader: {result.feedback}",
                )
            )
            return None
    for part_id, spec in zip(mine.part_ids(), mine.answer_parts(), strict=False):
        for expected, cases in ((True, spec.accept), (False, spec.reject)):
            for case in (c for c in cases if prompt_names(c)):
                report.answer_cases += 1
                shown = render_prompt(case, variant)
                result = grade_part(shown, spec)
                if result.correct != expected:
                    verb = "accept" if expected else "reject"
                    report.errors.append(
                        SetError(SET_FILE, f"{_where_of(at)}.{part_id}.{verb}",
                                 f"seed {seed}: {case!r} (here {shown!r}) should be {verb}ed: {result.feedback}")
                    )  # fmt: skip
                    return None
    return keys
