"""Each student's variant of a parameterised problem: its seed, and the variant, cached per version and seed.

The seed is an HMAC of the service's secret key over the assignment, the student and the problem: the same for one
student on every page, the API and the CLI, and not to be worked out from another student's. The variant is what
the problem's generator returns for it, run in the set's jailed checker (never in this process) and validated as
plain data (graders/problemset/variants.py); it is stored in ``problem_variant`` the first time, so page views and
gradings read it back instead of starting the checker.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import N_, ProblemUnavailable
from app.problemsets.models import ProblemSetVersion, ProblemVariant
from graders.code.grader import VariantFailed
from graders.model import ProblemBase
from graders.problemset.loader import LoadedSet
from graders.problemset.variants import Variant, VariantInvalid, VariantSource, parse_variant

log = logging.getLogger(__name__)

_SEED_LABEL = b"autograder-variant-seed-v1"
_SEED_BITS = 48  # fits a BIGINT and a JSON number that JavaScript reads exactly
# The seed of a variant all students share (an assignment's ``variants: shared``): by the generators' convention,
# the set's own numbers, those problemset.yaml's answers and accept/reject examples are written for.
SHARED_SEED = 0


def seed_for(settings: Settings, *, assignment_id: int, user_id: int, problem_id: str, round_: int = 0) -> int:
    """The student's seed for one problem of one assignment (deterministic, keyed by the service's secret);
    ``round_`` counts the new variants drawn under the assignment's ``new_variant_after`` (0: the first)."""
    key = hmac.new(settings.resolved_secret_key().encode(), _SEED_LABEL, hashlib.sha256).digest()
    text = f"{assignment_id}\0{user_id}\0{problem_id}" + (f"\0{round_}" if round_ else "")
    return int.from_bytes(hmac.new(key, text.encode(), hashlib.sha256).digest()[: _SEED_BITS // 8], "big")


def cached(session: Session, version_id: int, problem: ProblemBase, seed: int) -> Variant | None:
    """The stored variant, or None when it was never generated."""
    data = session.scalar(
        select(ProblemVariant.data).where(
            ProblemVariant.problem_set_version_id == version_id,
            ProblemVariant.problem_id == problem.id,
            ProblemVariant.seed == seed,
        )
    )
    return None if data is None else Variant.model_validate(data)


def variant_of(
    session: Session, settings: Settings, version: ProblemSetVersion, loaded: LoadedSet, problem: ProblemBase, seed: int
) -> Variant:
    """The variant for ``seed``: stored, or generated in the set's checker and stored (in its own savepoint).

    Raises ProblemUnavailable when the set's generator fails for this seed (the gate drew other seeds): the
    caller stores nothing, and the student reads that the problem is the set's fault, not theirs."""
    found = cached(session, version.id, problem, seed)
    if found is not None:
        return found
    assert problem.generator is not None
    try:
        variant = parse_variant(variant_checkers(settings).variant(loaded.root, problem.generator, seed), problem)
    except (VariantFailed, VariantInvalid) as exc:
        # The generator's own words go to the log for the instructor, never to the student (a generator is
        # instructor code: its message may name the key).
        log.warning("the generator of %s failed for seed %d of version %d: %s", problem.id, seed, version.id, exc)
        raise ProblemUnavailable(
            N_(
                "%(problem)s cannot be shown or graded just now: its numbers could not be made (the set's generator "
                "failed). Nothing was stored; tell your instructor."
            ),
            params={"problem": problem.id},
        ) from None
    try:
        with session.begin_nested():
            session.add(
                ProblemVariant(
                    problem_set_version_id=version.id, problem_id=problem.id, seed=seed, data=variant.model_dump()
                )
            )
    except IntegrityError:  # another request stored it first: the same data, a generator being deterministic
        pass
    return variant


def student_variant(
    session: Session,
    settings: Settings,
    *,
    version: ProblemSetVersion,
    loaded: LoadedSet,
    problem: ProblemBase,
    assignment_id: int,
    user_id: int,
    round_: int = 0,
    shared: bool = False,
) -> tuple[int | None, Variant | None]:
    """(seed, variant) of a student for a problem (their ``round_``-th new variant; SHARED_SEED where the
    assignment shares one variant); (None, None) where the problem has no parameters."""
    if problem.generator is None:
        return None, None
    seed = (
        SHARED_SEED
        if shared
        else seed_for(settings, assignment_id=assignment_id, user_id=user_id, problem_id=problem.id, round_=round_)
    )
    return seed, variant_of(session, settings, version, loaded, problem, seed)


def student_variants(
    session: Session,
    settings: Settings,
    *,
    version: ProblemSetVersion,
    loaded: LoadedSet,
    assignment_id: int,
    user_id: int,
    rounds: Mapping[str, int] | None = None,
    shared: bool = False,
) -> dict[str, Variant]:
    """Problem id -> the student's variant (of their round, problem id -> round), for each parameterised
    problem of the set (for its views)."""
    out: dict[str, Variant] = {}
    for problem in loaded.spec.problems:
        _, variant = student_variant(session, settings, version=version, loaded=loaded, problem=problem,
                                     assignment_id=assignment_id, user_id=user_id,
                                     round_=(rounds or {}).get(problem.id, 0), shared=shared)  # fmt: skip
        if variant is not None:
            out[problem.id] = variant
    return out


class _Checkers:
    """The generators' checkers of this process: a CheckerPool (no sandbox for student code), built on first use."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._pool: Any = None
        self._lock = threading.Lock()

    def variant(self, root: Any, relative: str, seed: int) -> Any:
        with self._lock:
            if self._pool is None:
                from graders.code.checker.pool import CheckerPool
                from graders.sandbox.config import SandboxConfig

                settings = self.settings  # as app.worker.code_grader builds it; a generator needs no GPU
                hidden = [settings.data_dir.resolve(), settings.problems_dir.resolve()]
                config = SandboxConfig(mode=settings.sandbox, slots=1, dev_mode=settings.dev_mode, hidden_paths=hidden)
                self._pool = CheckerPool(config)
        return self._pool.variant(Path(root), relative, seed, timeout_s=self.settings.variant_timeout_s)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


_CHECKERS: dict[tuple[Any, ...], _Checkers] = {}
_CHECKERS_LOCK = threading.Lock()


def variant_checkers(settings: Settings) -> VariantSource:
    """The process's generator checkers for these sandbox settings (one pool, whatever the caller)."""
    key = (settings.sandbox, settings.dev_mode, settings.variant_timeout_s, str(settings.data_dir.resolve()))
    with _CHECKERS_LOCK:
        if key not in _CHECKERS:
            _CHECKERS[key] = _Checkers(settings)
        return _CHECKERS[key]


def close_variant_checkers() -> None:
    """Stop every generator checker of this process (at shutdown, and between tests)."""
    with _CHECKERS_LOCK:
        checkers = list(_CHECKERS.values())
        _CHECKERS.clear()
    for one in checkers:
        one.close()
