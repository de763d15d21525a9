"""Trial runs of a bulk regrade, graded in a background thread of the API process (app.web.background_jobs): the
trial's page follows how many are graded, then shows what applying would change. Kept in this process's memory
for an hour after it ends, lost when the server restarts; only the staff member who started it sees it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from app.gradebook.trial_regrade import TrialPlan, run_trial
from app.web.background_jobs import BackgroundJobs, Job
from app.web.i18n import N_
from graders.code.grader import CodeGraderLike


@dataclass(kw_only=True)
class TrialJob(Job):
    assignment_id: int
    offering_id: int
    slug: str
    fields: dict[str, str]  # the preview's selection (problem, since, below_full): what applying selects again
    version_number: int  # the version the trial graded against
    selected: int  # the selection's size when the trial started: what applying would regrade
    total: int  # what the trial grades (at most TRIAL_LIMIT of the selection)
    graded: int = 0  # result, once done: {"prediction": Prediction}

    @property
    def problem_id(self) -> str:
        return self.fields["problem"]


def trial_jobs() -> BackgroundJobs[TrialJob]:
    return BackgroundJobs(name="trial", failure={"trial_error": N_("This trial run failed on our side; try again.")})


Work = Callable[[TrialJob], tuple[int, dict[str, Any]]]


def trial_work(plan: TrialPlan, code_grader: Callable[[], CodeGraderLike]) -> Work:
    """The job's work: grade the plan, counting progress on the job as it goes."""

    def work(job: TrialJob) -> tuple[int, dict[str, Any]]:
        prediction = run_trial(plan, code_grader, on_graded=lambda n: setattr(job, "graded", n))
        return 200, {"prediction": prediction}

    return work
