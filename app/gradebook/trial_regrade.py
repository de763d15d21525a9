"""A trial run of a bulk regrade: grade a selection's stored submissions against the current version of the set as
applying would (the worker's entry point, its penalties, hand-given points kept) and write nothing.

It is for what the preview cannot grade in the page: code problems, whose programs take seconds each in the
sandbox, and answer selections past the preview's limit. The plan is read from the database in the request; the
grading then runs (in a background thread of the API process, through the same sandbox as the upload gate: the
set's checks in its jailed checker, the programs in the student's child) with no database session at all, so a
trial cannot write a grade or change a status, and the set's code never runs in the API process.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from app.config import Settings
from app.errors import N_, Invalid
from app.gradebook.bulk_regrade import Prediction, Selection, final_of, manual_of, regraded_score
from app.problemsets.service import loaded_version
from app.submissions.models import Submission
from app.submissions.penalties import Penalties, grading_penalties
from graders.code.grader import CodeGraderLike
from graders.code.verdicts import loggable
from graders.problemset.loader import LoadedSet

log = logging.getLogger(__name__)
# The most submissions one trial grades: a code submission takes a few seconds in the sandbox, and the trial shares
# the sandbox's slots with the embedded workers.
TRIAL_LIMIT = 200


@dataclass(frozen=True)
class TrialItem:
    submission_id: int
    payload: dict[str, Any]
    before: float | None
    penalties: Penalties
    manual: float | None


@dataclass
class TrialPlan:
    loaded: LoadedSet
    version_number: int  # the set's current version when the trial was planned: what it grades against
    problem_id: str
    selected: int  # submissions in the selection: what applying regrades
    items: list[TrialItem]  # what the trial grades: all of them, or the first TRIAL_LIMIT in trial order


def trial_order(subs: list[Submission]) -> list[Submission]:
    """Each student's latest submission first (newest first), then each one's previous one, and so on: a capped
    trial covers as many students as it can, at the attempts most likely to count."""
    rank: dict[int, int] = {}
    seen: Counter[int] = Counter()
    for sub in sorted(subs, key=lambda s: s.id, reverse=True):
        rank[sub.id] = seen[sub.user_id]
        seen[sub.user_id] += 1
    return sorted(subs, key=lambda s: (rank[s.id], -s.id))


def plan_trial(session: Session, settings: Settings, selection: Selection, limit: int = TRIAL_LIMIT) -> TrialPlan:
    """What a trial of ``selection`` grades, read now (payloads, scores, penalties): at most ``limit`` of it."""
    if not selection.submissions:
        raise Invalid(N_("the selection holds no submission to try"), field="problem")

    loaded = loaded_version(settings, selection.version)
    items = []
    for sub in trial_order(selection.submissions)[:limit]:
        penalties = grading_penalties(session, sub, loaded.spec)
        items.append(TrialItem(sub.id, dict(sub.payload), final_of(sub), penalties, manual_of(sub)))
    return TrialPlan(loaded, selection.version.number, selection.problem_id, len(selection.submissions), items)


def run_trial(
    plan: TrialPlan, code_grader: Callable[[], CodeGraderLike], on_graded: Callable[[int], None] | None = None
) -> Prediction:
    """Grade each planned submission, one at a time (the workers keep the other sandbox slots); ``on_graded`` is
    told how many are done after each. A submission the sandbox or the current version cannot grade is counted
    as failed, as the worker would record a failure."""
    before = {item.submission_id: item.before for item in plan.items}
    after: dict[int, float | None] = {}
    failed = 0
    for item in plan.items:
        try:
            after[item.submission_id] = regraded_score(
                plan.loaded, plan.problem_id, item.payload, item.penalties, item.manual, code_grader
            )
        except Exception as exc:  # the sandbox failed, or the stored payload no longer fits the problem
            reason = loggable(f"{type(exc).__name__}: {exc}")
            log.warning("trial regrade of submission %s could not grade it: %s", item.submission_id, reason)
            after[item.submission_id], failed = None, failed + 1
        if on_graded is not None:
            on_graded(len(after))
    return Prediction(known=True, before=before, after=after, failed=failed)
